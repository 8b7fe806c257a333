package pluginhost

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/hayloft/hayloft/sdk/plugin"
)

// archiveDescribe is the entry in which a plugin packed as a script archive
// carries its describe answer: `python3 -m hayloft_plugin pack` stores what
// the module described at pack time there. The sha256 pin covers it with
// the rest of the file.
const archiveDescribe = "hayloft-describe.json"

// describeArchive reads the describe answer of a script archive (a "#!"
// line followed by a zip, as a Python .pyz is) instead of running it:
// `<plugin> describe` would start an interpreter to print what the archive
// holds, about as long as the plugin's own start-up. ok is false for any
// other file, which is then run as usual.
func describeArchive(src *Source, size int64) (info plugin.DescribeInfo, ok bool, err error) {
	f, err := os.Open(src.Path)
	if err != nil {
		return info, false, nil // running it reports the error
	}
	defer f.Close()
	head := make([]byte, 2)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, []byte("#!")) {
		return info, false, nil
	}
	z, err := zip.NewReader(f, size)
	if err != nil {
		return info, false, nil
	}
	for _, e := range z.File {
		if e.Name != archiveDescribe {
			continue
		}
		r, err := e.Open()
		if err != nil {
			return info, true, fmt.Errorf("%s: %s: %w", src, archiveDescribe, err)
		}
		defer r.Close()
		info, err = decodeDescribe(r)
		if err != nil {
			return info, true, fmt.Errorf("%s: %s: %w", src, archiveDescribe, err)
		}
		return info, true, nil
	}
	return info, false, nil
}
