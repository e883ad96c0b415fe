package main

// Each HTTP/2 request runs its handler on a goroutine of its own, which
// starts with a small stack (the runtime's average, 4 KB under load here).
// cdnapi's handlers go deeper than that: the middleware, the mux, the page
// cache and net/http's writer below them. The runtime then grows the stack
// in the middle of the handler, 25 frames down, and copying a stack costs
// in proportion to the frames it holds (each is looked up to adjust its
// pointers): about 7% of the CPU of serve under h2c load on the hot page
// (docs/performance.md: HTTP/2 and compression). HTTP/1.1 does not pay it:
// a connection's goroutine serves all its requests and keeps its grown
// stack.
//
// growStack makes the goroutine's stack large enough for a handler while it
// is still shallow, where the copy is cheap, as CockroachDB does for its
// RPC handlers (util/growstack).

// growStackBytes is the stack growStack ensures is free below its caller:
// a 4 KB stack grows once, to 8 KB, which holds the deepest handler.
const growStackBytes = 4 << 10

// growStack has a frame of growStackBytes, so that calling it grows the
// stack, when it is smaller, before the caller goes deeper. It reads its
// frame at i, which the compiler cannot know, so that the frame is kept.
//
//go:noinline
func growStack(i int) byte {
	var buf [growStackBytes]byte
	return buf[i%len(buf)]
}
