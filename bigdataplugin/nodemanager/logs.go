package nodemanager

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/translator"
)

// LogServer serves containers' logs from the node's log directories at the
// NodeManager's web paths, which the RM's links (amContainerLogs) and
// Hadoop's tools point at:
//
//	/node/containerlogs/<container>/<user>          the files, as links
//	/node/containerlogs/<container>/<user>/<file>   one file (?start=-N: its last N bytes)
//	/ws/v1/node/containers/<container>/logs         the files, as JSON
//	/ws/v1/node/containerlogs/<container>/<file>    one file
type LogServer struct {
	// Root is the node directory of containers' log directories
	// (translator.Runtime.LogRoot).
	Root string
}

// Handler returns the HTTP handler.
func (l LogServer) Handler() http.Handler {
	r := mux.NewRouter()
	r.HandleFunc("/node/containerlogs/{container}/{user}", l.list).Methods(http.MethodGet)
	r.HandleFunc("/node/containerlogs/{container}/{user}/{file}", l.file).Methods(http.MethodGet)
	r.HandleFunc("/ws/v1/node/containers/{container}/logs", l.listJSON).Methods(http.MethodGet)
	r.HandleFunc("/ws/v1/node/containerlogs/{container}/{file}", l.file).Methods(http.MethodGet)
	return r
}

// dir is a container's log directory, if the id is a container id.
func (l LogServer) dir(container string) (string, error) {
	id, err := records.ParseContainerID(container)
	if err != nil {
		return "", fmt.Errorf("invalid container id %q", container)
	}
	return translator.LogDirOf(l.Root, id.Attempt.App.String(), id.String()), nil
}

type logFile struct {
	FileName         string `json:"fileName"`
	FileSize         string `json:"fileSize"`
	LastModifiedTime string `json:"lastModifiedTime"`
}

func (l LogServer) files(w http.ResponseWriter, container string) ([]logFile, bool) {
	dir, err := l.dir(container)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		http.Error(w, fmt.Sprintf("Logs of container %s are not available on this node", container), http.StatusNotFound)
		return nil, false
	}
	var out []logFile
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		out = append(out, logFile{FileName: e.Name(), FileSize: strconv.FormatInt(info.Size(), 10),
			LastModifiedTime: info.ModTime().UTC().Format("Mon Jan 02 15:04:05 -0700 2006")})
	}
	return out, true
}

var listPage = template.Must(template.New("logs").Parse(`<!DOCTYPE html><html><head><title>Logs for {{.Container}}</title></head><body>
<h2>Logs for {{.Container}}</h2><ul>{{range .Files}}<li><a href="{{$.Base}}/{{.FileName}}">{{.FileName}}</a> : Total file length is {{.FileSize}} bytes.</li>{{end}}</ul></body></html>
`))

func (l LogServer) list(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	files, ok := l.files(w, v["container"])
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	listPage.Execute(w, map[string]any{"Container": v["container"], "Files": files, "Base": strings.TrimSuffix(r.URL.Path, "/")})
}

func (l LogServer) listJSON(w http.ResponseWriter, r *http.Request) {
	files, ok := l.files(w, mux.Vars(r)["container"])
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"containerLogsInfo": map[string]any{
		"containerLogInfo": files, "logAggregationType": "LOCAL", "containerId": mux.Vars(r)["container"]}})
}

// file serves one log file; start, as in the NodeManager, is a byte
// offset, counted from the end when negative.
func (l LogServer) file(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	dir, err := l.dir(v["container"])
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	name := v["file"]
	if name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		http.Error(w, "invalid log file name", http.StatusBadRequest)
		return
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		http.Error(w, fmt.Sprintf("Cannot find this log on the local disk: %s", name), http.StatusNotFound)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		http.Error(w, "not a log file", http.StatusNotFound)
		return
	}
	if s := r.URL.Query().Get("start"); s != "" {
		start, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			http.Error(w, "invalid start", http.StatusBadRequest)
			return
		}
		if start < 0 {
			start = max(info.Size()+start, 0)
		}
		if _, err := f.Seek(min(start, info.Size()), io.SeekStart); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.Copy(w, f)
}
