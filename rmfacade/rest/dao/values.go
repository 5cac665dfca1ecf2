package dao

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Float32 is a Java float. JAXB writes it with Float.toString, so whole
// numbers keep their ".0" ("100.0", not 100), large and small ones use Java's
// exponent form ("1.0E7"), and the non-numbers are NaN, INF and -INF
// (quoted in JSON).
type Float32 float32

// Float64 is a Java double, written as Double.toString does.
type Float64 float64

// MarshalText writes f as JAXB does.
func (f Float32) MarshalText() ([]byte, error) { return []byte(javaFloat(float64(f), 32)), nil }

// MarshalJSON writes f as Jersey does: a bare number, or a quoted NaN/INF/-INF.
func (f Float32) MarshalJSON() ([]byte, error) { return jsonFloat(float64(f), 32), nil }

// UnmarshalText reads a number as JAXB does, leniently (see parseJavaFloat).
func (f *Float32) UnmarshalText(b []byte) error {
	*f = Float32(parseJavaFloat(string(b)))
	return nil
}

// UnmarshalJSON reads a JSON number or string.
func (f *Float32) UnmarshalJSON(b []byte) error {
	*f = Float32(parseJavaFloat(jsonScalarText(b)))
	return nil
}

// MarshalText writes f as JAXB does.
func (f Float64) MarshalText() ([]byte, error) { return []byte(javaFloat(float64(f), 64)), nil }

// MarshalJSON writes f as Jersey does.
func (f Float64) MarshalJSON() ([]byte, error) { return jsonFloat(float64(f), 64), nil }

// UnmarshalText reads a number as JAXB does.
func (f *Float64) UnmarshalText(b []byte) error {
	*f = Float64(parseJavaFloat(string(b)))
	return nil
}

// UnmarshalJSON reads a JSON number or string.
func (f *Float64) UnmarshalJSON(b []byte) error {
	*f = Float64(parseJavaFloat(jsonScalarText(b)))
	return nil
}

func jsonFloat(v float64, bits int) []byte {
	s := javaFloat(v, bits)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte(`"` + s + `"`)
	}
	return []byte(s)
}

// javaFloat formats v as JAXB's printFloat/printDouble: NaN, INF, -INF, or
// Java's Float.toString/Double.toString of the shortest decimal that reads
// back as the same float (bits 32) or double (bits 64).
func javaFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "INF"
	case math.IsInf(v, -1):
		return "-INF"
	case v == 0:
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	if bits == 32 {
		v = float64(float32(v))
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	// Shortest digits, as d.ddde±x.
	e := strconv.FormatFloat(v, 'e', -1, bits)
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	if v >= 1e-3 && v < 1e7 {
		point := exp + 1 // digits before the decimal point
		switch {
		case point <= 0:
			return sign + "0." + strings.Repeat("0", -point) + digits
		case point >= len(digits):
			return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
		default:
			return sign + digits[:point] + "." + digits[point:]
		}
	}
	frac := digits[1:]
	if frac == "" {
		frac = "0"
	}
	return sign + digits[:1] + "." + frac + "E" + strconv.Itoa(exp)
}

// parseJavaFloat reads a float as JAXB does: surrounding space ignored, NaN,
// INF and -INF (and Java's Infinity) accepted, anything unreadable read as 0.
func parseJavaFloat(s string) float64 {
	s = strings.TrimSpace(s)
	switch s {
	case "NaN":
		return math.NaN()
	case "INF", "Infinity", "+Infinity":
		return math.Inf(1)
	case "-INF", "-Infinity":
		return math.Inf(-1)
	}
	// Java accepts a trailing type suffix: 1.5f, 2d.
	if n := len(s); n > 1 && strings.ContainsRune("fFdD", rune(s[n-1])) {
		s = s[:n-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return v
}

// jsonScalarText is the text of a JSON scalar: a string's contents, or a
// number or literal as written.
func jsonScalarText(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if json.Unmarshal(b, &s) == nil {
			return s
		}
	}
	return string(b)
}

// KeyValue is one entry of a java.util.Map<String,String> as JAXB writes
// it: {"key":...,"value":...} or <entry><key/><value/></entry>.
type KeyValue struct {
	Key   string `json:"key" xml:"key"`
	Value string `json:"value" xml:"value"`
}

// StringMap is a java.util.Map<String,String> as JAXB binds it: a list of
// entries. Responses (ResourceInformation's attributes) write it as Jersey
// does, repeating the "entry" key rather than making an array, and {} when
// empty; entries go in slice order (the RM writes HashMap order). Requests
// (a submission's environment, ACLs, service data, tokens, secrets) may send
// the entries repeated, as an array, or one bare.
type StringMap []KeyValue

// KeyLong is one entry of a java.util.Map<String,Long>.
type KeyLong struct {
	Key   string `json:"key" xml:"key"`
	Value int64  `json:"value" xml:"value"`
}

// LongMap is a java.util.Map<String,Long> property of a response, such as
// AppInfo's resourceSecondsMap: written like StringMap, and with the value
// as a JSON string ("value":"7885"), as Jersey writes it.
type LongMap []KeyLong

// MarshalJSON writes the map as Jersey does.
func (m StringMap) MarshalJSON() ([]byte, error) { return m.appendJSON(nil), nil }

// UnmarshalJSON reads the map in any of the forms Jersey accepts: entries
// repeated, as an array, or a single entry.
func (m *StringMap) UnmarshalJSON(b []byte) error {
	n, err := parseJSONTree(b)
	if err != nil {
		return err
	}
	m.assignFrom(n, "json")
	return nil
}

func (m *StringMap) assignFrom(n *node, tag string) { assignEntries(m, n, tag) }

// Map returns the entries as a Go map (a later duplicate key wins).
func (m StringMap) Map() map[string]string {
	out := make(map[string]string, len(m))
	for _, e := range m {
		out[e.Key] = e.Value
	}
	return out
}

// MarshalJSON writes the map as Jersey does.
func (m LongMap) MarshalJSON() ([]byte, error) { return m.appendJSON(nil), nil }

// UnmarshalJSON reads the map as LongMap.MarshalJSON writes it.
func (m *LongMap) UnmarshalJSON(b []byte) error {
	n, err := parseJSONTree(b)
	if err != nil {
		return err
	}
	m.assignFrom(n, "json")
	return nil
}

func (m *LongMap) assignFrom(n *node, tag string) { assignEntries(m, n, tag) }

func (m StringMap) writeXML(x *xmlWriter, name string) {
	x.mapStart(name, len(m) == 0)
	for _, e := range m {
		x.entry(e.Key, e.Value)
	}
	x.mapEnd(name, len(m) == 0)
}

func (m LongMap) writeXML(x *xmlWriter, name string) {
	x.mapStart(name, len(m) == 0)
	for _, e := range m {
		x.entry(e.Key, strconv.FormatInt(e.Value, 10))
	}
	x.mapEnd(name, len(m) == 0)
}

// Ptr returns a pointer to v, for the *string fields the RM sometimes
// leaves null.
func Ptr[T any](v T) *T { return &v }
