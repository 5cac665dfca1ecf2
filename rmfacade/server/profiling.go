package server

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

// withProfiling serves net/http/pprof's handlers under /debug/pprof/ and
// everything else from next. The handlers are registered on a mux of their
// own, not on http.DefaultServeMux as importing the package for its side
// effect would, so nothing else that serves the default mux exposes them.
func withProfiling(next http.Handler) http.Handler {
	prof := http.NewServeMux()
	prof.HandleFunc("/debug/pprof/", pprof.Index)
	prof.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	prof.HandleFunc("/debug/pprof/profile", pprof.Profile)
	prof.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	prof.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			prof.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
