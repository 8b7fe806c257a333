package chunk

import (
	"container/list"
	"context"
	"crypto/sha256"
	"sync"
)

// DocCache remembers what a retriever built from a document (its chunks,
// their vectors or postings) under the SHA-256 of the document's text, so
// that samples sharing one context are chunked and indexed once. It keeps
// the Size most recently used documents and is safe for concurrent use;
// concurrent callers asking for the same document wait for one build.
//
// A retriever owns one DocCache: its key does not include the retriever's
// settings.
type DocCache[V any] struct {
	size int

	mu      sync.Mutex
	entries map[[32]byte]*list.Element // of *docEntry[V]
	lru     list.List                  // front = most recently used
}

type docEntry[V any] struct {
	key  [32]byte
	done chan struct{} // closed when val and err are set
	val  V
	err  error
}

// NewDocCache returns a cache of at most size documents (at least one).
func NewDocCache[V any](size int) *DocCache[V] {
	return &DocCache[V]{size: max(size, 1), entries: map[[32]byte]*list.Element{}}
}

// Get returns the value built for text, calling build if it is not cached.
// A failed build is not cached: the next caller tries again. If ctx ends
// while waiting for another caller's build, Get returns ctx.Err().
func (c *DocCache[V]) Get(ctx context.Context, text string, build func() (V, error)) (V, error) {
	key := docKey(text)
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*docEntry[V])
		c.mu.Unlock()
		select {
		case <-e.done:
			if e.err == nil {
				return e.val, nil
			}
			// The build we waited for failed; build again ourselves.
			return c.Get(ctx, text, build)
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
	}
	e := &docEntry[V]{key: key, done: make(chan struct{})}
	c.entries[key] = c.lru.PushFront(e)
	for c.lru.Len() > c.size {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*docEntry[V]).key)
	}
	c.mu.Unlock()

	e.val, e.err = build()
	if e.err != nil {
		c.mu.Lock()
		if el, ok := c.entries[key]; ok && el.Value == e {
			c.lru.Remove(el)
			delete(c.entries, key)
		}
		c.mu.Unlock()
	}
	close(e.done)
	return e.val, e.err
}

// docKey is the SHA-256 of text. It hashes through a small buffer rather
// than converting the whole document to a []byte, which would allocate
// megabytes per request for a document that is usually cached already.
func docKey(text string) [32]byte {
	h := sha256.New()
	buf := make([]byte, 32<<10)
	for len(text) > 0 {
		n := copy(buf, text)
		h.Write(buf[:n])
		text = text[n:]
	}
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// Len is the number of documents cached or being built.
func (c *DocCache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
