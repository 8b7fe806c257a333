package sdk_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The SDK is what third parties import; if it pulled in kernel/ they would
// depend on our internals and every kernel change would break them.
func TestSDKDoesNotImportKernel(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "github.com/hayloft/hayloft/sdk/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/hayloft/hayloft/kernel") || strings.HasPrefix(pkg, "github.com/hayloft/hayloft/plugins") {
			t.Errorf("sdk depends on %s", pkg)
		}
	}
}
