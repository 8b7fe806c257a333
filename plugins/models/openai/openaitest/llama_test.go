package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// chatTimings posts one chat request and returns timings.cache_n.
func chatTimings(t *testing.T, s *Server, prompt string, slot *int) (int, error) {
	t.Helper()
	body := map[string]any{"model": "m", "messages": []Message{{Role: "user", Content: prompt}}, "max_tokens": 4}
	if slot != nil {
		body["id_slot"] = *slot
	}
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Timings *struct {
			CacheN  int `json:"cache_n"`
			PromptN int `json:"prompt_n"`
		} `json:"timings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || out.Timings == nil {
		return 0, fmt.Errorf("HTTP %d, timings %v", resp.StatusCode, out.Timings)
	}
	return out.Timings.CacheN, nil
}

// A document's second question arrives while its first holds the slot that
// computed the document. Pinned to that slot it waits and reuses the
// document; left to llama-server it takes the idle slot and computes the
// document again.
func TestLlamaSlots(t *testing.T) {
	doc := strings.Repeat("the barn holds the hay ", 200)
	docTokens := CountTokens(doc)
	for _, tc := range []struct {
		name   string
		pin    bool
		wantHi bool
	}{
		{"pinned", true, true},
		{"not pinned", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			entered := map[string]chan struct{}{}
			release := map[string]chan struct{}{}
			gate := func(prompt string) (chan struct{}, chan struct{}) {
				mu.Lock()
				defer mu.Unlock()
				if entered[prompt] == nil {
					entered[prompt], release[prompt] = make(chan struct{}), make(chan struct{})
				}
				return entered[prompt], release[prompt]
			}
			s := NewServer(Options{Llama: &LlamaConfig{Slots: 2, Hold: func(_ int, prompt string) {
				in, out := gate(prompt)
				close(in)
				<-out
			}}})
			defer s.Close()
			q1, q2 := doc+" first question?", doc+" second question?"
			var slot *int
			if tc.pin {
				zero := 0
				slot = &zero
			}
			first := make(chan error, 1)
			go func() { _, err := chatTimings(t, s, q1, slot); first <- err }()
			in1, out1 := gate(q1)
			<-in1 // q1 holds its slot
			second := make(chan int, 1)
			secondErr := make(chan error, 1)
			go func() {
				n, err := chatTimings(t, s, q2, slot)
				secondErr <- err
				second <- n
			}()
			in2, out2 := gate(q2)
			close(out2) // q2 passes its hold at once, whenever it gets a slot
			if tc.pin {
				close(out1) // q2 waits for slot 0 until q1 is done
			} else {
				<-in2 // q2 found the idle slot while q1 still holds its own
				close(out1)
			}
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			if err := <-secondErr; err != nil {
				t.Fatal(err)
			}
			cacheN := <-second
			if hit := cacheN >= docTokens; hit != tc.wantHi {
				t.Errorf("second question reused %d tokens (document %d); want a hit: %v", cacheN, docTokens, tc.wantHi)
			}
			st := s.Llama()
			cached, slots := st.Cached, st.Slots
			if pinned := st.Pinned == 2; pinned != tc.pin {
				t.Errorf("%d requests named their slot", st.Pinned)
			}
			if cached != int64(cacheN) {
				t.Errorf("server counted %d cached tokens, the response said %d", cached, cacheN)
			}
			if same := slots[q1][0] == slots[q2][0]; same != tc.pin {
				t.Errorf("slots %v and %v; want the same slot: %v", slots[q1], slots[q2], tc.pin)
			}
		})
	}
}

// llama-server's own choice among idle slots: the slot whose prompt shares
// most with the request, else the one used longest ago; /props and /slots
// report the slots; a bad id_slot and an over-long prompt are refused.
func TestLlamaServer(t *testing.T) {
	s := NewServer(Options{Llama: &LlamaConfig{Slots: 3, SlotContext: 400}})
	defer s.Close()
	doc := strings.Repeat("straw and oats ", 30)
	for i, want := range []int{0, 0, 0} { // three documents, three slots
		n, err := chatTimings(t, s, fmt.Sprint(i)+doc+"?", nil)
		if err != nil || n != want {
			t.Fatalf("document %d: cache_n %d, %v; want %d", i, n, err, want)
		}
	}
	n, err := chatTimings(t, s, "1"+doc+"again?", nil)
	if err != nil || n != CountTokens("1"+doc) {
		t.Errorf("the slot holding document 1: cache_n %d, %v; want %d", n, err, CountTokens("1"+doc))
	}
	three := 3
	if _, err := chatTimings(t, s, "x", &three); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("id_slot 3 of 3 slots: %v, want HTTP 400", err)
	}
	if _, err := chatTimings(t, s, strings.Repeat("long ", 500), nil); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("a prompt beyond the slot's context: %v, want HTTP 400", err)
	}
	var props struct {
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		TotalSlots int `json:"total_slots"`
	}
	getJSON(t, s.URL+"/props", &props)
	if props.Settings.NCtx != 400 || props.TotalSlots != 3 {
		t.Errorf("/props: %+v", props)
	}
	var slots []map[string]any
	getJSON(t, s.URL+"/slots", &slots)
	if len(slots) != 3 {
		t.Errorf("/slots: %v", slots)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}
