package dao

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Content types as the RM (Jersey on Jetty) labels its responses; the space
// in the XML one is the RM's.
const (
	ContentTypeJSON = "application/json;charset=utf-8"
	ContentTypeXML  = "application/xml; charset=utf-8"
)

// jsonRooted is implemented by the responses Hadoop's JAXBContextResolver
// renders with rootUnwrapping(false): their JSON is wrapped in an object
// named like their XML root element.
type jsonRooted interface{ jsonRoot() string }

// PrefersXML reports whether the RM would answer r in XML. Jersey matches
// the Accept header against what RMWebServices produces (JSON, then XML):
// media ranges are taken by quality, then by specificity, then in the
// order listed, and the first that JSON or XML satisfies decides, a
// wildcard choosing JSON. No Accept header, or nothing acceptable, is JSON
// here (the RM answers the latter with an error).
func PrefersXML(r *http.Request) bool {
	type rng struct {
		typ, sub string
		q        float64
		i        int
	}
	var ranges []rng
	for i, part := range strings.Split(strings.Join(r.Header.Values("Accept"), ","), ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		typ, sub, _ := strings.Cut(strings.ToLower(mt), "/")
		q := 1.0
		if s, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				q = f
			}
		}
		ranges = append(ranges, rng{typ, sub, q, i})
	}
	specificity := func(r rng) int {
		switch {
		case r.typ == "*":
			return 0
		case r.sub == "*":
			return 1
		}
		return 2
	}
	sort.SliceStable(ranges, func(a, b int) bool {
		if ranges[a].q != ranges[b].q {
			return ranges[a].q > ranges[b].q
		}
		return specificity(ranges[a]) > specificity(ranges[b])
	})
	for _, m := range ranges {
		if m.typ != "*" && m.typ != "application" {
			continue
		}
		switch m.sub {
		case "*", "json":
			return false
		case "xml":
			return true
		}
	}
	return false
}

// Write sends v with status, as XML when the request prefers it (see
// PrefersXML) and as JSON otherwise, encoded as the RM encodes its DTOs. A
// nil v sends no body, as the RM's 202 on submission.
func Write(w http.ResponseWriter, r *http.Request, status int, v any) {
	asXML := PrefersXML(r)
	ct := ContentTypeJSON
	if asXML {
		ct = ContentTypeXML
	}
	if s, ok := v.(AppsStream); ok && asXML {
		v = s.collect()
	}
	if s, ok := v.(jsonStreamer); ok && !asXML {
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		streamJSON(w, v, s)
		return
	}
	var body []byte
	var err error
	if v != nil {
		if asXML {
			body, err = EncodeXML(v)
		} else {
			body, err = EncodeJSON(v)
		}
	}
	if err != nil {
		// A DTO that cannot be encoded is a bug; answer as the RM does
		// when JAXB fails.
		status = http.StatusInternalServerError
		e := &RemoteExceptionData{Exception: "JAXBException", Message: err.Error(), JavaClassName: "javax.xml.bind.JAXBException"}
		if asXML {
			body, _ = EncodeXML(e)
		} else {
			body, _ = EncodeJSON(e)
		}
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	if len(body) > 0 {
		w.Write(body)
	}
}

// streamChunk is how much of a streamed answer is encoded before it is
// handed to the connection.
const streamChunk = 64 << 10

// streamJSON writes s as EncodeJSON would encode it, a chunk at a time.
// After a write error (the client went away) nothing more is written.
func streamJSON(w io.Writer, v any, s jsonStreamer) {
	b := make([]byte, 0, 2*streamChunk)
	var failed bool
	flush := func(b []byte) []byte {
		if len(b) < streamChunk {
			return b
		}
		if !failed {
			_, err := w.Write(b)
			failed = err != nil
		}
		return b[:0]
	}
	root, rooted := v.(jsonRooted)
	if rooted {
		b = append(append(append(b, `{"`...), root.jsonRoot()...), `":`...)
	}
	b = s.streamJSON(b, flush)
	if rooted {
		b = append(b, '}')
	}
	if !failed {
		w.Write(b)
	}
}

// Error sends the RM's error body, RemoteException, negotiated like Write:
//
//	{"RemoteException":{"exception":"NotFoundException","message":"...",
//	 "javaClassName":"org.apache.hadoop.yarn.webapp.NotFoundException"}}
//
// An empty message is left out, as the RM leaves out a null one.
func Error(w http.ResponseWriter, r *http.Request, status int, exceptionSimpleName, javaClassName, message string) {
	Write(w, r, status, &RemoteExceptionData{Exception: exceptionSimpleName, Message: message, JavaClassName: javaClassName})
}

// EncodeJSON encodes v as the RM's JSON: the root wrapped where the RM
// wraps it, no HTML escaping, no trailing newline.
func EncodeJSON(v any) ([]byte, error) {
	root, rooted := v.(jsonRooted)
	if a, ok := v.(jsonAppender); ok {
		var b []byte
		if rooted {
			b = append(append(append(b, `{"`...), root.jsonRoot()...), `":`...)
		}
		b = a.appendJSON(b)
		if rooted {
			b = append(b, '}')
		}
		return b, nil
	}
	body, err := marshalJSONNoEscape(v)
	if err != nil {
		return nil, err
	}
	if rooted {
		var b bytes.Buffer
		b.Grow(len(body) + len(root.jsonRoot()) + 5)
		b.WriteString(`{"`)
		b.WriteString(root.jsonRoot())
		b.WriteString(`":`)
		b.Write(body)
		b.WriteByte('}')
		return b.Bytes(), nil
	}
	return body, nil
}

// marshalJSONNoEscape is json.Marshal without the escaping of <, > and &,
// and with U+2028 and U+2029 left as they are, as Jackson writes.
func marshalJSONNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
	return unescapeLineSeparators(out), nil
}

// unescapeLineSeparators turns encoding/json's \u2028 and \u2029 escapes
// back into the characters.
func unescapeLineSeparators(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u202`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) && string(b[i+2:i+5]) == "202" && (b[i+5] == '8' || b[i+5] == '9') {
			if b[i+5] == '8' {
				out = append(out, "\u2028"...)
			} else {
				out = append(out, "\u2029"...)
			}
			i += 5
			continue
		}
		out = append(out, b[i], b[i+1]) // any other escape, kept whole
		i++
	}
	return out
}
