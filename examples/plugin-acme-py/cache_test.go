package acmepy_test

import (
	"context"
	"crypto/sha256"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hayloft/hayloft/kernel/store"
	"github.com/hayloft/hayloft/sdk"
)

// TestEmbeddingCache: a Python retriever (the "cached" retriever of the
// SDK's own test plugin, sdk/python/tests/demo.py) gets hayloft's embedding
// cache (a real journal) over the go-plugin broker, as a Go plugin does, so
// a second run embeds nothing; without the host's cache it embeds
// everything again.
func TestEmbeddingCache(t *testing.T) {
	pyz, sum := packOnce(t, filepath.Join("..", "..", "sdk", "python", "tests"), "demo")
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hayloft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	smp := &sdk.Sample{ID: "s", Context: "Hay. The loft is full. Barn.", Question: "q"}
	retrieve := func(cache sdk.EmbeddingCache) map[string]any {
		h := host(t, "demo", pyz, sum, 0)
		if cache != nil {
			h.UseEmbeddingCache(cache)
		}
		c, err := open(t, h, sdk.KindRetriever, "cached", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.(sdk.Retriever).Retrieve(ctx, &sdk.RetrieveRequest{Sample: smp})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Context != "The loft is full" {
			t.Errorf("context %q, want the longest sentence", resp.Context)
		}
		return resp.Details
	}

	if d := retrieve(st); d["embedded"] != 3.0 || d["cache"] != true {
		t.Fatalf("first run: details %v, want 3 sentences embedded with the cache", d)
	}
	got, err := st.GetEmbeddings(ctx, "demo/toy", [][32]byte{sha256.Sum256([]byte("Barn"))})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0], []float32{4, 'B'}) {
		t.Errorf("journal holds %v for \"Barn\", want the retriever's vector [4 66]", got[0])
	}
	if d := retrieve(st); d["embedded"] != 0.0 {
		t.Errorf("second run: details %v, want nothing embedded: the journal did not answer", d)
	}
	if d := retrieve(nil); d["embedded"] != 3.0 || d["cache"] != false {
		t.Errorf("without the host's cache: details %v, want 3 embedded and no cache", d)
	}
}
