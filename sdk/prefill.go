package sdk

import (
	"context"
	"sync"
)

// A server with a prefix cache can reuse a prompt's prefix for the next
// request only once it has computed it: its first streamed token says so,
// long before the answer ends. The kernel's send order waits for that moment
// before sending the requests that share the prefix, and learns of it
// through a hook on the context of Generate. A model that streams calls
// Prefilled when its first token arrives; one that does not never calls it,
// and the kernel then waits for the answer.

type prefillKey struct{}

// WithPrefillHook returns ctx carrying hook, to be called (through
// Prefilled) when the prompt of the request made with ctx has been
// computed. The hook runs at most once, and never after Generate returned
// if the model calls Prefilled from Generate's own goroutines.
func WithPrefillHook(ctx context.Context, hook func()) context.Context {
	var once sync.Once
	return context.WithValue(ctx, prefillKey{}, func() { once.Do(hook) })
}

// WantsPrefill reports whether ctx carries a prefill hook: a model may
// stream its answer only then, since nothing else needs the first token.
func WantsPrefill(ctx context.Context) bool {
	_, ok := ctx.Value(prefillKey{}).(func())
	return ok
}

// Prefilled calls ctx's prefill hook, if it has one. It is safe to call
// more than once and from any goroutine.
func Prefilled(ctx context.Context) {
	if hook, ok := ctx.Value(prefillKey{}).(func()); ok {
		hook()
	}
}
