package command

// Refreshing reports whether a read of the switches is in flight (for tests).
func (s *Switches) Refreshing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loading != nil
}
