package main

import "testing"

func TestFormatting(t *testing.T) {
	for _, tc := range []struct {
		have, want float64
		gap        string
	}{
		{0.1, 0.14, "pass"},
		{0.14, 0.14, "pass"},
		{0.28, 0.14, "FAIL, 2.00× off"},
		{66000, 12000, "FAIL, 5.50× off"}, // a rate: the target goes first
	} {
		if got := gap(tc.have, tc.want); got != tc.gap {
			t.Errorf("gap(%v, %v) = %q, want %q", tc.have, tc.want, got, tc.gap)
		}
	}
	for f, want := range map[float64]string{0: "0", 999.6: "1,000", 66000: "66,000", 1234567: "1,234,567"} {
		if got := thousands(f); got != want {
			t.Errorf("thousands(%v) = %q, want %q", f, got, want)
		}
	}
}
