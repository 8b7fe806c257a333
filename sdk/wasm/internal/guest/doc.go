// Package guest manages the buffers a wasm guest shares with its host. Its
// code builds for GOOS=wasip1 only.
package guest
