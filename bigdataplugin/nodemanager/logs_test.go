package nodemanager

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-sh/weft/translator"
)

func TestLogServer(t *testing.T) {
	root := t.TempDir()
	const container = "container_1795415742987_0001_01_000002"
	dir := translator.LogDirOf(root, "application_1795415742987_0001", container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stdout"), []byte("hello from the container\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(LogServer{Root: root}.Handler())
	defer srv.Close()
	tests := []struct {
		path   string
		status int
		body   string
	}{
		{"/node/containerlogs/" + container + "/alice", 200, `href="/node/containerlogs/` + container + `/alice/stdout"`},
		{"/node/containerlogs/" + container + "/alice/stdout", 200, "hello from the container\n"},
		{"/node/containerlogs/" + container + "/alice/stdout?start=-10", 200, "container\n"},
		{"/ws/v1/node/containers/" + container + "/logs", 200, `"fileName":"stdout"`},
		{"/ws/v1/node/containerlogs/" + container + "/stdout", 200, "hello"},
		{"/node/containerlogs/" + container + "/alice/missing", 404, "Cannot find this log"},
		{"/node/containerlogs/container_1795415742987_0001_01_000009/alice", 404, "not available on this node"},
		{"/node/containerlogs/not-a-container/alice", 400, "invalid container id"},
		{"/node/containerlogs/" + container + "/alice/..%2F..%2Fsecret", 404, ""}, // never matched as a file name
	}
	for _, tc := range tests {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.body) {
			t.Errorf("GET %s: %d %q, want %d containing %q", tc.path, resp.StatusCode, b, tc.status, tc.body)
		}
	}
}
