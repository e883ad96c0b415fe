package origin

// listState is what the list holds of a Syncer's project, by ID. The files
// whose IDs have the form ID gives, which are all the files a sync writes,
// are kept by their idKey; the others, written by some other means, apart:
// no file of the tree has their ID, so a pass that covers them deletes them.
type listState struct {
	byKey   map[idKey]entry
	foreign map[string]entry
}

// entry is a file as the list holds it.
type entry struct {
	rel   string
	size  int64
	mtime int64  // created_at, in Unix seconds
	gen   uint64 // the pass that last found the file in the tree
}

func newListState() *listState {
	return &listState{byKey: make(map[idKey]entry), foreign: make(map[string]entry)}
}

func (st *listState) put(id string, e entry) {
	if k, ok := keyOf(id); ok {
		st.byKey[k] = e
	} else {
		st.foreign[id] = e
	}
}

func (st *listState) delete(id string) {
	if k, ok := keyOf(id); ok {
		delete(st.byKey, k)
	} else {
		delete(st.foreign, id)
	}
}

// gone returns the IDs of the files that the pass gen did not find and that
// it covered.
func (st *listState) gone(gen uint64, covered func(rel string) bool) []string {
	var ids []string
	for k, e := range st.byKey {
		if e.gen != gen && covered(e.rel) {
			ids = append(ids, k.id())
		}
	}
	for id, e := range st.foreign {
		if e.gen != gen && covered(e.rel) {
			ids = append(ids, id)
		}
	}
	return ids
}
