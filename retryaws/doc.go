// Package retryaws retries AWS SDK for Go v2 calls with package retry's
// schedules and budgets: New returns an aws.RetryerV2 that classifies
// errors as the SDK's standard retryer does, waits the delays of a
// retry.Schedule and draws each retry from a retry.Budget.
//
//	policy := retry.Exponential(50 * time.Millisecond).Cap(5 * time.Second).FullJitter(nil).Take(4)
//	budget := retry.NewBudget(0.1, 10) // retries at most 10% of calls, plus 10
//	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
//		o.Retryer = retryaws.New(policy, budget)
//	})
//
// The SDK's own retry middleware still runs every attempt and every wait,
// so its x-amz-retry-after handling, its clock-skew correction, its
// retry-metrics header and its attempt results stay as they are; New only
// decides which errors, how long and how many. Tests that need its waits
// to take no real time run the client under testing/synctest, whose fake
// clock the middleware's timer follows.
package retryaws
