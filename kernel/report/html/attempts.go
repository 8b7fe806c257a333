package html

import (
	"context"
	"hash/maphash"
	"slices"
	"time"

	"github.com/hayloft/hayloft/kernel/store"
)

// attemptIndex holds a journal's tries by request key, compactly: at
// 200,000 requests a map of key strings to slices of records held some
// 40 MB of small objects that the collector traced on every cycle of a
// report, which allocates several times that while it writes the blocks.
// Here the keys lie in one byte slice and the records in one slice without
// pointers, found through a map of key hashes; statuses and errors, which
// repeat, are kept once each.
type attemptIndex struct {
	seed maphash.Seed
	last map[uint64]int32 // hash of a key → its latest record (chained back by prev)
	keys []byte           // the records' keys, one after another
	recs []attemptRec
	strs []string // statuses and errors; strs[0] is ""
}

type attemptRec struct {
	keyEnd         int32 // the key is keys[previous record's keyEnd:keyEnd]
	prev           int32 // the record before it with the same key hash; -1: none
	attempt        int32
	status, errMsg int32 // in strs
	latency        int64 // time.Duration
}

// readAttemptIndex reads every try the journal holds in one pass; nil
// when there are more than limit (the journal is mostly other runs':
// blocks look theirs up).
func readAttemptIndex(ctx context.Context, st *store.Store, limit, requests int) (*attemptIndex, error) {
	n, err := st.AttemptCount(ctx)
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, nil
	}
	x := &attemptIndex{seed: maphash.MakeSeed(), last: make(map[uint64]int32, requests), recs: make([]attemptRec, 0, n), strs: []string{""}}
	strIdx := map[string]int32{"": 0}
	intern := func(s string) int32 {
		i, ok := strIdx[s]
		if !ok {
			i = int32(len(x.strs))
			x.strs = append(x.strs, s)
			strIdx[s] = i
		}
		return i
	}
	err = st.EachAttempt(ctx, func(key []byte, a store.AttemptRecord) error {
		if x.keys == nil {
			x.keys = make([]byte, 0, n*len(key)) // keys are hashes of one length
		}
		h := maphash.Bytes(x.seed, key)
		prev, ok := x.last[h]
		if !ok {
			prev = -1
		}
		x.keys = append(x.keys, key...)
		x.last[h] = int32(len(x.recs))
		x.recs = append(x.recs, attemptRec{keyEnd: int32(len(x.keys)), prev: prev, attempt: int32(a.Attempt),
			status: intern(a.Status), errMsg: intern(a.Error), latency: int64(a.Latency)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return x, nil
}

// of appends the tries at the request with key to buf[:0], oldest first,
// and returns it.
func (x *attemptIndex) of(key string, buf []store.AttemptRecord) []store.AttemptRecord {
	buf = buf[:0]
	i, ok := x.last[maphash.String(x.seed, key)]
	if !ok {
		return buf
	}
	for ; i >= 0; i = x.recs[i].prev {
		r := &x.recs[i]
		start := int32(0)
		if i > 0 {
			start = x.recs[i-1].keyEnd
		}
		if string(x.keys[start:r.keyEnd]) != key {
			continue // another key of the same hash
		}
		buf = append(buf, store.AttemptRecord{Attempt: int(r.attempt), Status: x.strs[r.status], Error: x.strs[r.errMsg], Latency: time.Duration(r.latency)})
	}
	slices.Reverse(buf) // the chain runs newest first
	return buf
}
