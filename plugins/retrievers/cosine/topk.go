package cosine

import (
	"runtime"
	"sync"

	"github.com/hayloft/hayloft/plugins/retrievers/chunk"
)

// parallelMin is the matrix size (in floats) from which scoring is split
// across cores; below it the goroutines cost more than they save.
const parallelMin = 1 << 20

// TopK returns the k rows of matrix (row-major, dim floats per row) with the
// largest dot product with q, best first, ties to the lower row. With unit
// rows and a unit q the dot product is the cosine similarity. Exact: every
// row is scored, then a k-element heap keeps the best (chunk.TopK).
func TopK(matrix []float32, dim int, q []float32, k int) []chunk.Hit {
	return chunk.TopK(Scores(matrix, dim, q, nil), k)
}

// Scores computes the dot product of every row of matrix with q into dst
// (grown if needed) and returns it.
func Scores(matrix []float32, dim int, q []float32, dst []float32) []float32 {
	rows := 0
	if dim > 0 {
		rows = len(matrix) / dim
	}
	if cap(dst) < rows {
		dst = make([]float32, rows)
	}
	dst = dst[:rows]
	q = q[:dim]
	workers := 1
	if len(matrix) >= parallelMin {
		workers = min(runtime.GOMAXPROCS(0), rows)
	}
	if workers <= 1 {
		scoreRows(matrix, dim, q, dst)
		return dst
	}
	// Contiguous row ranges, so each worker streams its own part of memory.
	var wg sync.WaitGroup
	per := (rows + workers - 1) / workers
	for lo := 0; lo < rows; lo += per {
		hi := min(lo+per, rows)
		wg.Add(1)
		go func() {
			defer wg.Done()
			scoreRows(matrix[lo*dim:hi*dim], dim, q, dst[lo:hi])
		}()
	}
	wg.Wait()
	return dst
}

func scoreRows(matrix []float32, dim int, q []float32, dst []float32) {
	for i := range dst {
		dst[i] = dot(matrix[i*dim:(i+1)*dim], q)
	}
}

// dot is the inner product, with four independent sums so the additions do
// not wait on each other. The fixed-size windows let the compiler drop the
// bounds checks from the loop.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	for len(a) >= 4 {
		x, y := a[:4:4], b[:4:4]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		a, b = a[4:], b[4:]
	}
	for i, x := range a {
		s0 += x * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
