package dao

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxBodyBytes bounds the request bodies Read accepts. The RM sets no limit;
// submissions, tokens included, are a few KiB.
const MaxBodyBytes = 32 << 20

// RequestError is a request body the RM would refuse, with the status and
// RemoteException it answers with. Write it with its Write method.
type RequestError struct {
	Status        int
	Exception     string // simple class name, e.g. WebApplicationException
	JavaClassName string
	Message       string // "" when the RM sends no message
	Err           error  // the underlying parse error, if any
}

func (e *RequestError) Error() string {
	if e.Message != "" {
		return e.Exception + ": " + e.Message
	}
	return e.Exception
}

func (e *RequestError) Unwrap() error { return e.Err }

// Write renders the error as the RM's RemoteException body.
func (e *RequestError) Write(w http.ResponseWriter, r *http.Request) {
	Error(w, r, e.Status, e.Exception, e.JavaClassName, e.Message)
}

// The RM's answers to bodies it cannot read (Hadoop 3.4.1: Jersey raises a
// WebApplicationException, and GenericExceptionHandler maps it to 400 when
// JAXB could not unmarshal the body and to 503 otherwise).
func unreadable(msg string, err error) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Exception: "WebApplicationException",
		JavaClassName: ClassWebApplicationException, Message: msg, Err: err}
}

func unsupportedMediaType(v any, contentType string) *RequestError {
	e := &RequestError{Status: http.StatusServiceUnavailable, Exception: "WebApplicationException",
		JavaClassName: ClassWebApplicationException, Err: fmt.Errorf("unsupported Content-Type %q", contentType)}
	if contentType == "" {
		// Jersey reads a body without a Content-Type as
		// application/octet-stream, for which it has no reader.
		if jc, ok := v.(interface{ javaClass() string }); ok {
			c := jc.javaClass()
			e.Message = "com.sun.jersey.api.MessageException: A message body reader for Java class " + c +
				", and Java type class " + c + ", and MIME media type application/octet-stream was not found.\n"
		}
	}
	return e
}

// jaxbRootElements is the list JAXB prints when an XML body has a root it
// does not know (Hadoop 3.4.1's RM context, unwrapped classes).
const jaxbRootElements = "<{}NewApplication>,<{}application-submission-context>,<{}applicationpriority>," +
	"<{}appqueue>,<{}container-launch-context-info>,<{}credentials-info>,<{}delegation-token>," +
	"<{}localresources>,<{}log-aggregation-context>,<{}resourceInfo>,<{}resourceInformations>,<{}resourceOption>"

// Read decodes the request body into v (a pointer) by its Content-Type, as
// Jersey reads the RM's request DTOs: application/json (Jersey's natural
// notation, unwrapped) or application/xml, anything else refused. It is as
// lenient as JAXB: unknown fields are ignored; a JSON list may be a single
// value and an entry may repeat its key; numbers and booleans may be quoted,
// and an unreadable number reads as 0. Errors are *RequestError.
func Read(r *http.Request, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("dao.Read: need a non-nil pointer, have %T", v)
	}
	ct := r.Header.Get("Content-Type")
	mt := ""
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return unsupportedMediaType(v, ct)
		}
	}
	if mt != "application/json" && mt != "application/xml" {
		return unsupportedMediaType(v, mt)
	}
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
		if err != nil {
			return unreadable("java.io.IOException: "+err.Error(), err)
		}
		if len(body) > MaxBodyBytes {
			return unreadable("java.io.IOException: request body larger than "+strconv.Itoa(MaxBodyBytes)+" bytes", nil)
		}
	}
	if mt == "application/json" {
		return decodeJSONBody(body, v)
	}
	return decodeXMLBody(body, v)
}

func decodeJSONBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return unreadable("javax.xml.bind.UnmarshalException: Error creating JSON-based XMLStreamReader\n"+
			" - with linked exception:\n[javax.xml.stream.XMLStreamException: JSON expression can not be empty!]", io.EOF)
	}
	n, err := parseJSONTree(body)
	if err == nil && n.kind != nodeObject && n.kind != nodeNull {
		err = errors.New("JSON body is not an object")
	}
	if err != nil {
		return unreadable("javax.xml.bind.UnmarshalException\n - with linked exception:\n"+
			"[javax.xml.stream.XMLStreamException: "+err.Error()+"]", err)
	}
	assign(reflect.ValueOf(v).Elem(), n, "json")
	return nil
}

func decodeXMLBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return unreadable("javax.xml.bind.UnmarshalException\n - with linked exception:\n"+
			"[org.xml.sax.SAXParseException; lineNumber: 1; columnNumber: 1; Premature end of file.]", io.EOF)
	}
	n, err := parseXMLTree(body)
	if err != nil {
		return unreadable("javax.xml.bind.UnmarshalException\n - with linked exception:\n"+
			"[org.xml.sax.SAXParseException; "+err.Error()+"]", err)
	}
	target := reflect.ValueOf(v).Elem()
	if want := xmlRootName(target.Type()); want != "" && want != n.name {
		return unreadable(`javax.xml.bind.UnmarshalException: unexpected element (uri:"", local:"`+n.name+
			`"). Expected elements are `+jaxbRootElements, fmt.Errorf("root element <%s>, want <%s>", n.name, want))
	}
	assign(target, n, "xml")
	return nil
}

// node is a parsed JSON value or XML element, before it is assigned to a
// Go value. Object members and child elements keep their order and may
// repeat.
type node struct {
	name     string
	kind     nodeKind
	text     string // scalar text: a JSON string's contents, a number or literal as written, an element's text
	children []*node
}

type nodeKind uint8

const (
	nodeNull nodeKind = iota
	nodeScalar
	nodeObject
	nodeArray
)

const maxDepth = 256

// parseJSONTree parses exactly one JSON document: anything but white
// space after it (trailing bytes, a second document) is an error, as the
// RM's JSON reader refuses it with 400 — never half-read and acted on.
func parseJSONTree(b []byte) (*node, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	n, err := parseJSONValue(d, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected content after the JSON document at offset %d", d.InputOffset())
	}
	return n, nil
}

func parseJSONValue(d *json.Decoder, name string, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := d.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	n := &node{name: name}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.kind = nodeObject
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string)
				c, err := parseJSONValue(d, key, depth+1)
				if err != nil {
					return nil, err
				}
				n.children = append(n.children, c)
			}
		case '[':
			n.kind = nodeArray
			for d.More() {
				c, err := parseJSONValue(d, name, depth+1)
				if err != nil {
					return nil, err
				}
				n.children = append(n.children, c)
			}
		default:
			return nil, fmt.Errorf("unexpected %q", t)
		}
		if _, err := d.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.kind, n.text = nodeScalar, t
	case json.Number:
		n.kind, n.text = nodeScalar, t.String()
	case bool:
		n.kind, n.text = nodeScalar, strconv.FormatBool(t)
	case nil:
		n.kind = nodeNull
	}
	return n, nil
}

// xmlTrailer reads what follows the root element: white space, comments
// and processing instructions only, as an XML parser allows there.
func xmlTrailer(d *xml.Decoder) error {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.Comment, xml.ProcInst:
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return errors.New("Content is not allowed in trailing section.")
			}
		default:
			return errors.New("Content is not allowed in trailing section.")
		}
	}
}

func parseXMLTree(b []byte) (*node, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.CharsetReader = charsetReader
	var stack []*node
	var text [][]byte
	for {
		tok, err := d.Token()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) > maxDepth {
				return nil, errors.New("XML nested too deeply")
			}
			n := &node{name: t.Name.Local, kind: nodeScalar}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.kind = nodeObject
				p.children = append(p.children, n)
			}
			stack = append(stack, n)
			text = append(text, nil)
		case xml.CharData:
			if len(text) > 0 {
				text[len(text)-1] = append(text[len(text)-1], t...)
			}
		case xml.EndElement:
			n := stack[len(stack)-1]
			if n.kind == nodeScalar {
				n.text = string(text[len(text)-1])
			}
			stack, text = stack[:len(stack)-1], text[:len(text)-1]
			if len(stack) == 0 {
				return n, xmlTrailer(d)
			}
		}
	}
}

// charsetReader lets XML bodies declare the encodings JAXB is commonly sent
// besides UTF-8.
func charsetReader(charset string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(charset) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return in, nil
	case "iso-8859-1", "latin1", "iso8859-1", "l1":
		b, err := io.ReadAll(in)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, len(b)*2)
		for _, c := range b {
			out = utf8.AppendRune(out, rune(c))
		}
		return bytes.NewReader(out), nil
	}
	return nil, fmt.Errorf("unsupported encoding %q", charset)
}

// nodeAssigner is implemented by values that read a node their own way
// (the JAXB map forms).
type nodeAssigner interface {
	assignFrom(n *node, tag string)
}

// assign stores n into v by the struct tags named tag ("json" or "xml"),
// converting scalars as JAXB does. What does not fit is ignored.
func assign(v reflect.Value, n *node, tag string) {
	if n == nil || n.kind == nodeNull {
		return
	}
	if v.CanAddr() {
		if a, ok := v.Addr().Interface().(nodeAssigner); ok {
			a.assignFrom(n, tag)
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		assign(v.Elem(), n, tag)
	case reflect.Struct:
		switch n.kind {
		case nodeArray: // a list where one object belongs: take each in turn
			for _, c := range n.children {
				assign(v, c, tag)
			}
		case nodeObject:
			fields := fieldsOf(v.Type(), tag)
			for _, c := range n.children {
				f, ok := fields[c.name]
				if !ok {
					continue
				}
				fv := fieldByIndex(v, f)
				if _, ok := fv.Addr().Interface().(nodeAssigner); !ok && fv.Kind() == reflect.Slice {
					appendNode(fv, c, tag)
				} else {
					assign(fv, c, tag)
				}
			}
		}
	case reflect.Slice:
		appendNode(v, n, tag)
	case reflect.String:
		if n.kind == nodeScalar {
			v.SetString(n.text)
		}
	case reflect.Bool:
		if n.kind == nodeScalar {
			v.SetBool(parseJavaBool(n.text))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.kind == nodeScalar {
			i, err := strconv.ParseInt(javaIntText(n.text), 10, v.Type().Bits())
			if err != nil {
				i = 0
			}
			v.SetInt(i)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.kind == nodeScalar {
			i, err := strconv.ParseUint(javaIntText(n.text), 10, v.Type().Bits())
			if err != nil {
				i = 0
			}
			v.SetUint(i)
		}
	case reflect.Float32, reflect.Float64:
		if n.kind == nodeScalar {
			v.SetFloat(parseJavaFloat(n.text))
		}
	}
}

// appendNode appends n to the slice v: each element of a JSON array, or n
// itself (JAXB's natural JSON sends a one-element list as the bare value,
// and XML repeats the element).
func appendNode(v reflect.Value, n *node, tag string) {
	items := []*node{n}
	if n.kind == nodeArray {
		items = n.children
	}
	for _, c := range items {
		if c.kind == nodeNull {
			continue
		}
		e := reflect.New(v.Type().Elem()).Elem()
		assign(e, c, tag)
		v.Set(reflect.Append(v, e))
	}
}

// assignEntries reads a JAXB map — {"entry":[{"key":..,"value":..}]} or
// <m><entry><key/><value/></entry></m> — appending to *dst.
func assignEntries[S ~[]E, E any](dst *S, n *node, tag string) {
	if n.kind != nodeObject {
		return
	}
	for _, c := range n.children {
		if c.name == "entry" {
			appendNode(reflect.ValueOf(dst).Elem(), c, tag)
		}
	}
}

func parseJavaBool(s string) bool {
	s = strings.TrimSpace(s)
	return s == "true" || s == "1"
}

func javaIntText(s string) string {
	s = strings.TrimSpace(s)
	return strings.TrimPrefix(s, "+")
}

type fieldKey struct {
	t   reflect.Type
	tag string
}

var fieldCache sync.Map // fieldKey -> map[string][]int

// fieldsOf maps the names a struct's fields have under tag to their
// indexes, looking through embedded structs.
func fieldsOf(t reflect.Type, tag string) map[string][]int {
	k := fieldKey{t, tag}
	if m, ok := fieldCache.Load(k); ok {
		return m.(map[string][]int)
	}
	m := map[string][]int{}
	collectFields(t, tag, nil, m)
	fieldCache.Store(k, m)
	return m
}

func collectFields(t reflect.Type, tag string, prefix []int, m map[string][]int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get(tag), ",")
		if name == "-" || f.Name == "XMLName" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if tag == "xml" && (strings.Contains(opts, "attr") || strings.Contains(opts, "chardata") || strings.Contains(opts, "innerxml")) {
			continue
		}
		index := append(append([]int(nil), prefix...), i)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			collectFields(ft, tag, index, m)
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := m[name]; !dup {
			m[name] = index
		}
	}
}

// fieldByIndex is reflect.Value.FieldByIndex, allocating nil embedded
// pointers on the way.
func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// xmlRootName is the element name of t's XMLName field, if it has one.
func xmlRootName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return ""
	}
	if f, ok := t.FieldByName("XMLName"); ok {
		name, _, _ := strings.Cut(f.Tag.Get("xml"), ",")
		if i := strings.LastIndexByte(name, ' '); i >= 0 {
			name = name[i+1:]
		}
		return name
	}
	return ""
}
