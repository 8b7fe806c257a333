package pluginhost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hayloft/hayloft/sdk/plugin"
)

// describeTimeout bounds `<plugin> describe`, which should only print.
const describeTimeout = 30 * time.Second

// describeKey identifies one version of a binary on disk: rebuilding it
// changes the size or the modification time, which invalidates the entry.
type describeKey struct {
	path  string
	size  int64
	mtime time.Time
}

type describeResult struct {
	info plugin.DescribeInfo
	sha  string // hex sha256 of the binary when it was described
}

// describe returns what src serves, running `<bin> describe` (or reading
// the answer a script archive carries) unless the same file was described
// before.
func (h *Host) describe(ctx context.Context, src *Source) (plugin.DescribeInfo, error) {
	if src.Builtin && h.opts.Builtin != nil {
		return plugin.Describe(h.opts.Builtin), nil
	}
	fi, err := checkBinary(src)
	if err != nil {
		return plugin.DescribeInfo{}, err
	}
	key := describeKey{path: src.Path, size: fi.Size(), mtime: fi.ModTime()}
	h.mu.Lock()
	res, ok := h.cache[key]
	h.mu.Unlock()
	if ok {
		if err := checkPin(src, res.sha); err != nil {
			return plugin.DescribeInfo{}, err
		}
		return res.info, nil
	}

	sum, err := verifySHA256(src)
	if err != nil {
		return plugin.DescribeInfo{}, err
	}
	info, ok, err := describeArchive(src, fi.Size())
	if err != nil {
		return plugin.DescribeInfo{}, err
	}
	if !ok {
		if info, err = runDescribe(ctx, src); err != nil {
			return plugin.DescribeInfo{}, err
		}
	}
	h.mu.Lock()
	h.cache[key] = describeResult{info: info, sha: sum}
	h.mu.Unlock()
	return info, nil
}

// runDescribe runs `<bin> describe`.
func runDescribe(ctx context.Context, src *Source) (plugin.DescribeInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, src.Path, describeArgs(src)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return plugin.DescribeInfo{}, fmt.Errorf("%s: describe: %w", src, ctx.Err())
		}
		return plugin.DescribeInfo{}, fmt.Errorf("%s: describe: %v%s", src, err, firstLine(stderr.String()))
	}
	info, err := decodeDescribe(&stdout)
	if err != nil {
		return info, fmt.Errorf("%s: describe: %w", src, err)
	}
	return info, nil
}

// decodeDescribe reads a describe answer: JSON naming a protocol. The
// errors read after "describe:" or the archive entry's name.
func decodeDescribe(r io.Reader) (plugin.DescribeInfo, error) {
	var info plugin.DescribeInfo
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return plugin.DescribeInfo{}, fmt.Errorf("no valid JSON: %v", err)
	}
	if info.Protocol == "" {
		return plugin.DescribeInfo{}, errors.New("no protocol named; is it a hayloft plugin?")
	}
	return info, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return ": " + s
}

func describeArgs(src *Source) []string {
	if src.Builtin {
		return []string{"plugin", "describe"}
	}
	return []string{"describe"}
}

func startArgs(src *Source, kind, name string) []string {
	if src.Builtin {
		return []string{"plugin", "start", kind, name}
	}
	return []string{"start", kind, name}
}

// checkBinary gives one-line errors naming the file for the usual ways a
// plugin path is wrong.
func checkBinary(src *Source) (fs.FileInfo, error) {
	fi, err := os.Stat(src.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("plugin %q: binary %s does not exist", src.Name, src.Path)
	case err != nil:
		return nil, fmt.Errorf("plugin %q: %w", src.Name, err)
	case fi.IsDir():
		return nil, fmt.Errorf("plugin %q: %s is a directory, not a plugin binary", src.Name, src.Path)
	case fi.Mode().Perm()&0o111 == 0:
		return nil, fmt.Errorf("plugin %q: %s is not executable (mode %s)", src.Name, src.Path, fi.Mode().Perm())
	}
	return fi, nil
}

// verifySHA256 hashes the binary and checks it against the pin, if any. It
// returns the hash (empty for built-ins, which are hayloft itself).
func verifySHA256(src *Source) (string, error) {
	if src.Builtin {
		return "", nil
	}
	f, err := os.Open(src.Path)
	if err != nil {
		return "", fmt.Errorf("plugin %q: %w", src.Name, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("plugin %q: hash %s: %w", src.Name, src.Path, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	return sum, checkPin(src, sum)
}

func checkPin(src *Source, sum string) error {
	if src.SHA256 == "" || src.SHA256 == sum {
		return nil
	}
	return fmt.Errorf("plugin %q: sha256 mismatch for %s: config says %s, file has %s", src.Name, src.Path, src.SHA256, sum)
}
