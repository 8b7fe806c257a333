//go:build wasip1

package guest

import (
	"encoding/json"
	"fmt"
)

// Call is an exported entry point that speaks JSON (aggregate, which runs
// once per eval, keeps version 1's JSON): read the input the host placed at
// ptr, decode it, call f, and encode its result — or an {"error"} object —
// as the bytes to Return. what names the export in messages; f is
// nil when nothing was registered. A panic in f is deliberately not
// recovered: the instance traps, the host discards it and records the
// panic, so a broken scorer never keeps running on corrupted state.
func Call[In, Out any](what, register string, ptr, n uint32, f func(In) (Out, error)) []byte {
	raw, ok := Bytes(ptr, n)
	if !ok {
		return errorJSON(fmt.Sprintf("%s: input %#x+%d was not allocated by malloc", what, ptr, n))
	}
	if f == nil {
		return errorJSON(fmt.Sprintf("%s: no function registered (call %s in init)", what, register))
	}
	var in In
	if err := json.Unmarshal(raw, &in); err != nil {
		return errorJSON(what + ": decode input: " + err.Error())
	}
	out, err := f(in)
	if err != nil {
		return errorJSON(err.Error())
	}
	b, err := json.Marshal(out)
	if err != nil {
		return errorJSON(what + ": encode output: " + err.Error())
	}
	return b
}

func errorJSON(msg string) []byte {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	return b
}
