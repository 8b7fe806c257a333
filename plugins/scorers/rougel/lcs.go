package rougel

import "math/bits"

// Score is precision, recall and F of one comparison, under rouge_score's
// field names.
type Score struct {
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	Fmeasure  float64 `json:"fmeasure"`
}

// fmeasure is rouge_score's scoring.fmeasure: the harmonic mean, 0 when both
// are 0.
func fmeasure(p, r float64) float64 {
	if p+r > 0 {
		return 2 * p * r / (p + r)
	}
	return 0
}

// weightedF is tf-text's rouge_l F: alpha in [0,1] weights precision
// (alpha=0.5 is F1, 1 is P, 0 is R); alpha < 0 selects tensor2tensor's
// formula with beta = P/R. A zero denominator gives 0.
func weightedF(p, r, alpha float64) float64 {
	if alpha < 0 {
		beta := p / (r + 1e-12)
		num := (1 + beta*beta) * r * p
		den := r + beta*beta*p
		if den == 0 {
			return 0
		}
		return num / den
	}
	den := alpha*r + (1-alpha)*p
	if den == 0 {
		return 0
	}
	return p * r / den
}

// lcsBuf is reusable scratch memory for lcsLen.
type lcsBuf struct {
	row   []int32  // per symbol: its row in masks, -1 if it is not in the shorter sequence
	masks []uint64 // per distinct symbol of the shorter sequence: the bits of its positions
	v     []uint64 // the bit row over the shorter sequence
}

// lcsLen returns the length of the longest common subsequence of a and b
// (non-negative symbols). It is the bit-parallel form of the O(n·m) dynamic
// program (Hyyrö 2004): one row of the table over the shorter sequence is
// kept as a bit vector V whose zero bits count the LCS so far, and each
// symbol of the longer sequence updates it as V = (V + (V & M)) | (V &^ M),
// M being the positions where the symbol occurs (precomputed once per
// distinct symbol). Time O(n·m/64), memory O(min(n, m)) words per distinct
// symbol plus a symbol index. buf may be nil.
func lcsLen(a, b []int32, buf *lcsBuf) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a) == 0 {
		return 0
	}
	if buf == nil {
		buf = &lcsBuf{}
	}
	maxSym := int32(0)
	for _, x := range a {
		maxSym = max(maxSym, x)
	}
	buf.row = resize(buf.row, int(maxSym)+1)
	for i := range buf.row {
		buf.row[i] = -1
	}
	words := (len(a) + 63) / 64
	masks := buf.masks[:0]
	rows := int32(0)
	for i, x := range a {
		r := buf.row[x]
		if r < 0 {
			r, buf.row[x] = rows, rows
			rows++
			for range words {
				masks = append(masks, 0)
			}
		}
		masks[int(r)*words+i>>6] |= 1 << (i & 63)
	}
	buf.masks = masks
	if cap(buf.v) < words {
		buf.v = make([]uint64, words)
	}
	v := buf.v[:words]
	for k := range v {
		v[k] = ^uint64(0)
	}
	for _, y := range b {
		if y > maxSym || buf.row[y] < 0 {
			continue // no match anywhere: V is unchanged
		}
		m := masks[int(buf.row[y])*words:]
		m = m[:words]
		var carry uint64
		for k, vk := range v {
			u := vk & m[k]
			var sum uint64
			sum, carry = bits.Add64(vk, u, carry)
			v[k] = sum | (vk &^ m[k])
		}
	}
	zeros := 0
	for k, w := range v {
		if rem := len(a) - 64*k; rem < 64 {
			w |= ^uint64(0) << rem // bits past the end do not count
		}
		zeros += bits.OnesCount64(^w)
	}
	return zeros
}

func resize(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// lcsTable is the full (len(ref)+1)×(len(can)+1) dynamic-programming table,
// row-major, for backtracking. Only sentence pairs use it.
func lcsTable(ref, can []int32) []int32 {
	cols := len(can) + 1
	t := make([]int32, (len(ref)+1)*cols)
	for i := 1; i <= len(ref); i++ {
		for j := 1; j <= len(can); j++ {
			switch {
			case ref[i-1] == can[j-1]:
				t[i*cols+j] = t[(i-1)*cols+j-1] + 1
			case t[(i-1)*cols+j] >= t[i*cols+j-1]:
				t[i*cols+j] = t[(i-1)*cols+j]
			default:
				t[i*cols+j] = t[i*cols+j-1]
			}
		}
	}
	return t
}

// lcsRefIndices backtracks one LCS and returns its indices into ref in
// increasing order. Which LCS is found when several exist decides union-LCS
// scores, so the tie rule is the reference's: rouge_score moves up (i-1) on
// ties, pltrdy/rouge moves left (j-1) (preferLeft).
func lcsRefIndices(ref, can []int32, t []int32, preferLeft bool) []int {
	cols := len(can) + 1
	i, j := len(ref), len(can)
	var rev []int
	for i > 0 && j > 0 {
		switch {
		case ref[i-1] == can[j-1]:
			rev = append(rev, i-1)
			i--
			j--
		case preferLeft && !(t[(i-1)*cols+j] > t[i*cols+j-1]):
			j--
		case !preferLeft && t[i*cols+j-1] > t[(i-1)*cols+j]:
			j--
		default:
			i--
		}
	}
	for l, r := 0, len(rev)-1; l < r; l, r = l+1, r-1 {
		rev[l], rev[r] = rev[r], rev[l]
	}
	return rev
}

// summaryLevel is rouge_score's _summary_level_lcs (rougeLsum): for each
// reference sentence, the union of its LCS indices with every candidate
// sentence; each token of that union is a hit while both sides still have
// an unused occurrence of it (ROUGE-1.5.5's guard against double counting).
// P = hits/candidate tokens, R = hits/reference tokens.
func summaryLevel(refSents, canSents [][]int32) Score {
	m, n := 0, 0
	for _, s := range refSents {
		m += len(s)
	}
	for _, s := range canSents {
		n += len(s)
	}
	if len(refSents) == 0 || len(canSents) == 0 || m == 0 || n == 0 {
		return Score{}
	}
	cntR := map[int32]int{}
	cntC := map[int32]int{}
	for _, s := range refSents {
		for _, t := range s {
			cntR[t]++
		}
	}
	for _, s := range canSents {
		for _, t := range s {
			cntC[t]++
		}
	}
	hits := 0
	for _, r := range refSents {
		union := make([]bool, len(r))
		for _, c := range canSents {
			for _, i := range lcsRefIndices(r, c, lcsTable(r, c), false) {
				union[i] = true
			}
		}
		for i, in := range union {
			if !in {
				continue
			}
			t := r[i]
			if cntC[t] > 0 && cntR[t] > 0 {
				hits++
				cntC[t]--
				cntR[t]--
			}
		}
	}
	p := float64(hits) / float64(n)
	rc := float64(hits) / float64(m)
	return Score{Precision: p, Recall: rc, Fmeasure: fmeasure(p, rc)}
}
