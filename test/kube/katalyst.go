package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// KatalystAPIVersion is the katalyst-api release whose CRDs the tests
// install: the peer's own definitions, not a copy.
const KatalystAPIVersion = "v0.4.0"

// KatalystCNRCRD returns the path of katalyst-api's CustomNodeResource CRD,
// from the module downloaded through the Go module proxy.
func KatalystCNRCRD(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "github.com/kubewharf/katalyst-api@"+KatalystAPIVersion)
	cmd.Dir = os.TempDir() // outside any module
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("download katalyst-api %s: %v\n%s", KatalystAPIVersion, err, out)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("download katalyst-api %s: %v %s", KatalystAPIVersion, err, mod.Error)
	}
	path := filepath.Join(mod.Dir, "config", "crd", "bases", "node.katalyst.kubewharf.io_customnoderesources.yaml")
	if _, err := os.Stat(path); err != nil {
		return "", err
	}
	return path, nil
}
