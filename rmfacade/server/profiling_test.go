package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestProfilingServesPprofBesideTheRest(t *testing.T) {
	rest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := withProfiling(rest)
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/debug/pprof/", http.StatusOK},
		{"/debug/pprof/heap?debug=1", http.StatusOK},
		{"/ws/v1/cluster/info", http.StatusTeapot},
		{"/debug/pprofx", http.StatusTeapot},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.path, rec.Code, tc.want)
		}
	}
}
