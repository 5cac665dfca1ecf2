// Package shuffle is the node's MapReduce shuffle service: what Hadoop's
// ShuffleHandler (the "mapreduce_shuffle" auxiliary service) does on a
// NodeManager. Map tasks leave their output in the application's local
// directory on the node; reducers fetch their partitions over HTTP,
// authenticated with the job token the AM registered when it started the
// job's containers.
package shuffle

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/weft-sh/weft/bigdataplugin/internal/dirs"
	"github.com/weft-sh/weft/translator"
)

// ServiceID is the auxiliary service's name in launch contexts' service
// data and in StartContainers' services metadata.
const ServiceID = "mapreduce_shuffle"

// Headers of the shuffle protocol (ShuffleHeader, SecureShuffleUtils).
const (
	headerName     = "name"
	headerVersion  = "version"
	headerURLHash  = "UrlHash"
	headerReply    = "ReplyHash"
	protocolName   = "mapreduce"
	protocolVer    = "1.0.0"
	indexRecordLen = 24
)

// Service serves map outputs.
type Service struct {
	// LocalRoot is the node directory of applications' local directories:
	// <LocalRoot>/usercache/<user>/appcache/<application>.
	LocalRoot string
	// Port is the port the service listens on, which fetchers sign into
	// their requests.
	Port int

	mu     sync.RWMutex
	tokens map[string]jobToken // by job id
}

type jobToken struct {
	user   string
	secret []byte
}

// MetaData is what StartContainers returns for the service: its port, as
// ShuffleHandler.serializeMetaData writes it (a Java int).
func MetaData(port int) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, uint32(port))
	return b
}

// Register records a job's token from the service data an AM put in a
// container's launch context (ShuffleHandler.serializeServiceData: a
// Hadoop Token in its Writable form; its password is the job's secret).
// The token is kept in the application's directory too, as a
// NodeManager's recovery store keeps it: a restarted plugin still serves
// the running job's reducers, and the file goes with the application's
// directory when it finishes.
func (s *Service) Register(app, user string, serviceData []byte) error {
	secret, err := jobSecret(serviceData)
	if err != nil {
		return err
	}
	if s.LocalRoot != "" {
		dir := translator.AppLocalDir(s.LocalRoot, user, app)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("shuffle: keep job token: %w", err)
		}
		if err := dirs.WriteFileAtomic(filepath.Join(dir, tokenFile), serviceData, 0o600); err != nil {
			return fmt.Errorf("shuffle: keep job token: %w", err)
		}
	}
	s.remember(app, jobToken{user: user, secret: secret})
	return nil
}

// jobSecret reads the job's secret from its token's Writable form.
func jobSecret(serviceData []byte) ([]byte, error) {
	r := bytes.NewReader(serviceData)
	if _, err := readBytes(r); err != nil { // identifier
		return nil, fmt.Errorf("shuffle: job token: %w", err)
	}
	secret, err := readBytes(r)
	if err != nil {
		return nil, fmt.Errorf("shuffle: job token: %w", err)
	}
	return secret, nil
}

// remember keeps an application's job token in memory.
func (s *Service) remember(app string, tok jobToken) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]jobToken{}
	}
	s.tokens["job_"+strings.TrimPrefix(app, "application_")] = tok
}

// tokenFile is the job token's file in an application's directory.
const tokenFile = ".shuffle-jobtoken"

// Forget drops a finished application's token, as ShuffleHandler's
// stopApplication does.
func (s *Service) Forget(app string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, "job_"+strings.TrimPrefix(app, "application_"))
}

// token finds a job's token: in memory, or kept by an earlier run of the
// plugin in the application's directory.
func (s *Service) token(job string) (jobToken, bool) {
	s.mu.RLock()
	tok, ok := s.tokens[job]
	s.mu.RUnlock()
	if ok || s.LocalRoot == "" {
		return tok, ok
	}
	app := "application_" + strings.TrimPrefix(job, "job_")
	files, _ := filepath.Glob(filepath.Join(s.LocalRoot, "usercache", "*", "appcache", app, tokenFile))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		secret, err := jobSecret(data)
		if err != nil {
			continue
		}
		// <root>/usercache/<user>/appcache/<app>/<tokenFile>
		tok = jobToken{user: filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(f)))), secret: secret}
		s.remember(app, tok)
		return tok, true
	}
	return jobToken{}, false
}

// readBytes reads a Hadoop vint-prefixed byte array.
func readBytes(r *bytes.Reader) ([]byte, error) {
	n, err := readVInt(r)
	if err != nil {
		return nil, err
	}
	if n < 0 || int(n) > r.Len() {
		return nil, errors.New("bad length")
	}
	b := make([]byte, n)
	_, err = io.ReadFull(r, b)
	return b, err
}

// readVInt reads Hadoop's WritableUtils variable-length integer.
func readVInt(r io.ByteReader) (int64, error) {
	first, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	b := int8(first)
	if b >= -112 {
		return int64(b), nil
	}
	neg := b < -120
	n := int(-112 - int(b))
	if neg {
		n = int(-120 - int(b))
	}
	var v int64
	for i := 0; i < n; i++ {
		c, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		v = v<<8 | int64(c)
	}
	if neg {
		v = ^v
	}
	return v, nil
}

// writeVLong writes Hadoop's WritableUtils variable-length integer.
func writeVLong(w *bytes.Buffer, v int64) {
	if v >= -112 && v <= 127 {
		w.WriteByte(byte(v))
		return
	}
	l := int64(-112)
	if v < 0 {
		v = ^v
		l = -120
	}
	for t := v; t != 0; t >>= 8 {
		l--
	}
	w.WriteByte(byte(l))
	n := int(-(l + 112))
	if n > 8 {
		n = -(int(l) + 120)
	}
	for i := n; i > 0; i-- {
		w.WriteByte(byte(v >> ((i - 1) * 8)))
	}
}

func writeString(w *bytes.Buffer, s string) {
	writeVLong(w, int64(len(s)))
	w.WriteString(s)
}

var (
	jobID     = regexp.MustCompile(`^job_\d+_\d+$`)
	attemptID = regexp.MustCompile(`^attempt_\d+_\d+_[mr]_\d+_\d+$`)
)

// ServeHTTP answers GET /mapOutput?job=..&reduce=..&map=a,b as
// ShuffleHandler does.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/mapOutput" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Header.Get(headerName) != protocolName || r.Header.Get(headerVersion) != protocolVer {
		http.Error(w, "Incompatible shuffle request version", http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	job, reduceStr, maps := q.Get("job"), q.Get("reduce"), q["map"]
	reduce, err := strconv.Atoi(reduceStr)
	if !jobID.MatchString(job) || err != nil || reduce < 0 || len(maps) == 0 {
		http.Error(w, "Required param job, map and reduce", http.StatusBadRequest)
		return
	}
	var mapIDs []string
	for _, m := range maps {
		for _, id := range strings.Split(m, ",") {
			if !attemptID.MatchString(id) {
				http.Error(w, "invalid map id", http.StatusBadRequest)
				return
			}
			mapIDs = append(mapIDs, id)
		}
	}
	tok, ok := s.token(job)
	if !ok {
		http.Error(w, "Verification of the hashReply failed", http.StatusUnauthorized)
		return
	}
	// SecureShuffleUtils: the fetcher signs port, path and query with the
	// job's secret; the reply signs that signature back.
	mac := func(msg []byte) string {
		m := hmac.New(sha1.New, tok.secret)
		m.Write(msg)
		return base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	urlHash := r.Header.Get(headerURLHash)
	msg := strconv.Itoa(s.Port) + r.URL.Path + "?" + r.URL.RawQuery
	if urlHash == "" || !hmac.Equal([]byte(mac([]byte(msg))), []byte(urlHash)) {
		http.Error(w, "Verification of the hashReply failed", http.StatusUnauthorized)
		return
	}
	app := "application_" + strings.TrimPrefix(job, "job_")
	dir := filepath.Join(translator.AppLocalDir(s.LocalRoot, tok.user, app), "output")
	// Check every map first: an error status can only be sent before the
	// body starts.
	type part struct {
		id                   string
		offset, raw, partLen int64
	}
	parts := make([]part, 0, len(mapIDs))
	for _, id := range mapIDs {
		off, raw, plen, err := readIndex(filepath.Join(dir, id, "file.out.index"), reduce)
		if err != nil {
			http.Error(w, fmt.Sprintf("Error getting map output for %s: %v", id, err), http.StatusInternalServerError)
			return
		}
		parts = append(parts, part{id, off, raw, plen})
	}
	w.Header().Set(headerReply, mac([]byte(urlHash)))
	w.Header().Set(headerName, protocolName)
	w.Header().Set(headerVersion, protocolVer)
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	defer bw.Flush()
	for _, p := range parts {
		var h bytes.Buffer
		writeString(&h, p.id)
		writeVLong(&h, p.partLen)
		writeVLong(&h, p.raw)
		writeVLong(&h, int64(reduce))
		bw.Write(h.Bytes())
		f, err := os.Open(filepath.Join(dir, p.id, "file.out"))
		if err != nil {
			return // the fetcher sees a short body and retries elsewhere
		}
		_, err = io.Copy(bw, io.NewSectionReader(f, p.offset, p.partLen))
		f.Close()
		if err != nil {
			return
		}
	}
}

// readIndex reads a partition's record from a map's spill index: per
// partition startOffset, rawLength and partLength (big-endian longs).
func readIndex(path string, reduce int) (offset, raw, partLen int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	rec := make([]byte, indexRecordLen)
	if _, err := f.ReadAt(rec, int64(reduce)*indexRecordLen); err != nil {
		return 0, 0, 0, fmt.Errorf("partition %d: %w", reduce, err)
	}
	return int64(binary.BigEndian.Uint64(rec)), int64(binary.BigEndian.Uint64(rec[8:])), int64(binary.BigEndian.Uint64(rec[16:])), nil
}
