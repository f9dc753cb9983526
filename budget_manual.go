package retry

// Deposit adds one call's share (the ratio given to NewBudget) to b's
// balance, up to the reserve, exactly as Retry and Do do when a call that
// uses b starts. It is for a retry loop that is not Retry's (the AWS SDK's,
// a message consumer's): call it once per call, before its first attempt,
// and Withdraw before each retry. It is lock-free and allocates nothing.
func (b *Budget) Deposit() { b.credit() }

// Withdraw takes one token from b for a retry and reports true, or reports
// false and takes nothing when less than one token is left: then the retry
// must not be made. Retry and Do call it before each retry of a call that
// uses b; a loop of one's own calls it the same way, after Deposit. A token
// withdrawn for a retry that is then not made is not given back. It is
// lock-free and allocates nothing.
func (b *Budget) Withdraw() bool { return b.withdraw() }
