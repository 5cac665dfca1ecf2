package shuffle

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/weft-sh/weft/translator"
)

// token writes a Hadoop Token in its Writable form, as
// ShuffleHandler.serializeServiceData does.
func token(identifier, password []byte) []byte {
	var b bytes.Buffer
	for _, f := range [][]byte{identifier, password, []byte("mapreduce.job"), []byte("")} {
		writeVLong(&b, int64(len(f)))
		b.Write(f)
	}
	return b.Bytes()
}

func TestVLongRoundTrip(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 127, -112, 128, -113, 300, -300, 1 << 20, -(1 << 40), 1<<62 + 5} {
		var b bytes.Buffer
		writeVLong(&b, v)
		got, err := readVInt(bytes.NewReader(b.Bytes()))
		if err != nil || got != v {
			t.Errorf("%d: got %d, %v (bytes %x)", v, got, err, b.Bytes())
		}
	}
}

func TestMapOutput(t *testing.T) {
	root := t.TempDir()
	const app, job, mapID = "application_1795417778413_0007", "job_1795417778413_0007", "attempt_1795417778413_0007_m_000000_0"
	dir := filepath.Join(translator.AppLocalDir(root, "alice", app), "output", mapID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Two partitions: reduce 0 gets "zero", reduce 1 gets "partition-one".
	data := []byte("zeropartition-one")
	index := make([]byte, 2*indexRecordLen+8)
	for i, r := range [][3]int64{{0, 4, 4}, {4, 13, 13}} {
		for j, v := range r {
			binary.BigEndian.PutUint64(index[i*indexRecordLen+j*8:], uint64(v))
		}
	}
	os.WriteFile(filepath.Join(dir, "file.out"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "file.out.index"), index, 0o644)

	secret := []byte("job-secret")
	s := &Service{LocalRoot: root, Port: 13562}
	if err := s.Register(app, "alice", token([]byte("job-id"), secret)); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	sign := func(key []byte, msg string) string {
		m := hmac.New(sha1.New, key)
		m.Write([]byte(msg))
		return base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	fetch := func(key []byte, reduce int) (*http.Response, []byte) {
		q := "job=" + job + "&reduce=" + strconv.Itoa(reduce) + "&map=" + url.QueryEscape(mapID)
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/mapOutput?"+q, nil)
		req.Header.Set("name", "mapreduce")
		req.Header.Set("version", "1.0.0")
		req.Header.Set("UrlHash", sign(key, "13562/mapOutput?"+q))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, b
	}

	resp, body := fetch(secret, 1)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	urlHash := sign(secret, "13562/mapOutput?job="+job+"&reduce=1&map="+url.QueryEscape(mapID))
	if resp.Header.Get("ReplyHash") != sign(secret, urlHash) {
		t.Errorf("ReplyHash %q", resp.Header.Get("ReplyHash"))
	}
	// ShuffleHeader: mapId, compressed and raw lengths, the reduce; then
	// the partition.
	r := bytes.NewReader(body)
	n, _ := readVInt(r)
	id := make([]byte, n)
	io.ReadFull(r, id)
	comp, _ := readVInt(r)
	raw, _ := readVInt(r)
	red, _ := readVInt(r)
	rest, _ := io.ReadAll(r)
	if string(id) != mapID || comp != 13 || raw != 13 || red != 1 || string(rest) != "partition-one" {
		t.Errorf("got %s %d %d %d %q", id, comp, raw, red, rest)
	}

	if resp, _ := fetch([]byte("wrong secret"), 0); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong job token: %d", resp.StatusCode)
	}
	if resp, _ := fetch(secret, 7); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("missing partition: %d", resp.StatusCode)
	}

	// A restarted plugin (a new Service on the same directories) still
	// serves the running job: the token was kept in the app's directory.
	srv.Config.Handler = &Service{LocalRoot: root, Port: 13562}
	if resp, body := fetch(secret, 0); resp.StatusCode != http.StatusOK {
		t.Errorf("after a restart: status %d: %s", resp.StatusCode, body)
	}
	// Once the application finished, its token is gone with its directory.
	restarted := srv.Config.Handler.(*Service)
	restarted.Forget(app)
	os.RemoveAll(translator.AppLocalDir(root, "alice", app))
	if resp, _ := fetch(secret, 0); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after the application finished: %d", resp.StatusCode)
	}
}
