package retryserver

// SetJitter replaces the Shedder's source of jitter, for tests: f returns a
// number in [0, 1).
func SetJitter(s *Shedder, f func() float64) { s.jitter = f }
