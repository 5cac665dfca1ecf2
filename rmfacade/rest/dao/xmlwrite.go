package dao

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// xmlHeader is the declaration JAXB writes.
const xmlHeader = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`

const xsiNamespace = "http://www.w3.org/2001/XMLSchema-instance"

// EncodeXML encodes v as the RM's XML, which JAXB writes and encoding/xml
// cannot: the standalone declaration, no indentation, an empty object as
// <x/> but an empty string as <x></x>, only &, <, >, " and CR escaped in
// text, and xmlns:xsi declared on the first element with an xsi:type. It
// follows the `xml` struct tags as encoding/xml reads them (name, attr,
// omitempty, "-", XMLName for the root, embedded structs flattened), writes
// nil pointers and empty lists as nothing, and uses MarshalText for leaf
// values that have it.
func EncodeXML(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil, errors.New("dao.EncodeXML: nil value")
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return nil, errors.New("dao.EncodeXML: nil value")
	}
	name := xmlRootName(rv.Type())
	if name == "" {
		name = rv.Type().Name()
	}
	x := &xmlWriter{}
	x.buf.WriteString(xmlHeader)
	if err := x.element(name, rv, false); err != nil {
		return nil, err
	}
	return x.buf.Bytes(), nil
}

type xmlWriter struct {
	buf bytes.Buffer
}

// xmlElementWriter is implemented by values with their own XML form (the
// JAXB map forms).
type xmlElementWriter interface {
	writeXML(x *xmlWriter, name string)
}

var textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()

// element writes v as the element name; nothing for a nil pointer.
func (x *xmlWriter) element(name string, v reflect.Value, xsiDeclared bool) error {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if w, ok := v.Interface().(xmlElementWriter); ok {
		w.writeXML(x, name)
		return nil
	}
	if v.Type().Implements(textMarshalerType) {
		text, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return err
		}
		x.leaf(name, string(text))
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		return x.complex(name, v, xsiDeclared)
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if err := x.element(name, v.Index(i), xsiDeclared); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map, reflect.Func, reflect.Chan, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return fmt.Errorf("dao.EncodeXML: cannot write %s as <%s>", v.Type(), name)
	}
	x.leaf(name, scalarText(v))
	return nil
}

func scalarText(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32:
		return javaFloat(v.Float(), 32)
	case reflect.Float64:
		return javaFloat(v.Float(), 64)
	}
	return ""
}

func (x *xmlWriter) leaf(name, text string) {
	x.buf.WriteByte('<')
	x.buf.WriteString(name)
	x.buf.WriteByte('>')
	escapeXMLText(&x.buf, text, false)
	x.buf.WriteString("</")
	x.buf.WriteString(name)
	x.buf.WriteByte('>')
}

// mapStart, entry and mapEnd write a JAXB map: <name><entry><key>k</key>
// <value>v</value></entry>...</name>, or <name/> when empty.
func (x *xmlWriter) mapStart(name string, empty bool) {
	x.buf.WriteByte('<')
	x.buf.WriteString(name)
	if empty {
		x.buf.WriteString("/>")
		return
	}
	x.buf.WriteByte('>')
}

func (x *xmlWriter) entry(key, value string) {
	x.buf.WriteString("<entry>")
	x.leaf("key", key)
	x.leaf("value", value)
	x.buf.WriteString("</entry>")
}

func (x *xmlWriter) mapEnd(name string, empty bool) {
	if empty {
		return
	}
	x.buf.WriteString("</")
	x.buf.WriteString(name)
	x.buf.WriteByte('>')
}

func (x *xmlWriter) complex(name string, v reflect.Value, xsiDeclared bool) error {
	info := xmlFieldsOf(v.Type())
	type attr struct{ name, value string }
	var attrs []attr
	if t, ok := v.Interface().(interface{ xsiType() string }); ok && t.xsiType() != "" {
		attrs = append(attrs, attr{"xsi:type", t.xsiType()})
	}
	for _, f := range info {
		if !f.attr {
			continue
		}
		fv, ok := fieldValue(v, f.index)
		if !ok || (f.omitEmpty && fv.IsZero()) {
			continue
		}
		for fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				break
			}
			fv = fv.Elem()
		}
		if fv.Kind() == reflect.Pointer {
			continue
		}
		attrs = append(attrs, attr{f.name, scalarText(fv)})
	}
	x.buf.WriteByte('<')
	x.buf.WriteString(name)
	for _, a := range attrs {
		if !xsiDeclared && strings.HasPrefix(a.name, "xsi:") {
			x.buf.WriteString(` xmlns:xsi="` + xsiNamespace + `"`)
			xsiDeclared = true
		}
	}
	for _, a := range attrs {
		x.buf.WriteByte(' ')
		x.buf.WriteString(a.name)
		x.buf.WriteString(`="`)
		escapeXMLText(&x.buf, a.value, true)
		x.buf.WriteByte('"')
	}
	open := x.buf.Len()
	x.buf.WriteByte('>')
	start := x.buf.Len()
	for _, f := range info {
		if f.attr {
			continue
		}
		fv, ok := fieldValue(v, f.index)
		if !ok || (f.omitEmpty && isEmptyValue(fv)) {
			continue
		}
		if err := x.element(f.name, fv, xsiDeclared); err != nil {
			return err
		}
	}
	if x.buf.Len() == start {
		x.buf.Truncate(open)
		x.buf.WriteString("/>")
		return nil
	}
	x.buf.WriteString("</")
	x.buf.WriteString(name)
	x.buf.WriteByte('>')
	return nil
}

// escapeXMLText escapes s as JAXB does: &, <, >, " and CR in text, and in
// attribute values also LF and tab.
func escapeXMLText(b *bytes.Buffer, s string, attr bool) {
	last := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&quot;"
		case '\r':
			esc = "&#xD;"
		case '\n':
			if !attr {
				continue
			}
			esc = "&#xA;"
		case '\t':
			if !attr {
				continue
			}
			esc = "&#x9;"
		default:
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(esc)
		last = i + 1
	}
	b.WriteString(s[last:])
}

type xmlField struct {
	name      string
	index     []int
	attr      bool
	omitEmpty bool
}

var xmlFieldCache sync.Map // reflect.Type -> []xmlField

// xmlFieldsOf lists the fields of struct type t as elements or attributes,
// in declaration order, embedded structs flattened in place.
func xmlFieldsOf(t reflect.Type) []xmlField {
	if fs, ok := xmlFieldCache.Load(t); ok {
		return fs.([]xmlField)
	}
	var fs []xmlField
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("xml")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" || f.Name == "XMLName" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			index := append(append([]int(nil), prefix...), i)
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
				walk(ft, index)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fs = append(fs, xmlField{
				name:      name,
				index:     index,
				attr:      hasOpt(opts, "attr"),
				omitEmpty: hasOpt(opts, "omitempty"),
			})
		}
	}
	walk(t, nil)
	xmlFieldCache.Store(t, fs)
	return fs
}

func hasOpt(opts, opt string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == opt {
			return true
		}
	}
	return false
}

// fieldValue is v.FieldByIndex, reporting false through a nil embedded
// pointer.
func fieldValue(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
