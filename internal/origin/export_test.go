package origin

// SetBeforeHash makes s call f with the path of every file it is about to
// open to hash: the moment between the walk and the read, where a race
// with the tree's writers is made deterministic.
func SetBeforeHash(s *Syncer, f func(rel string)) { s.beforeHash = f }

// WithoutOpenat2 makes the package open as it does where the kernel has no
// openat2, one name at a time, until the test ends.
func WithoutOpenat2(t interface{ Cleanup(func()) }) {
	was := noOpenat2.Swap(true)
	t.Cleanup(func() { noOpenat2.Store(was) })
}
