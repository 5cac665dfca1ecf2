// Package credentials reads and writes Hadoop's token storage ("HDTS"):
// the tokens a client puts in a ContainerLaunchContext and the file a
// container finds at HADOOP_TOKEN_FILE_LOCATION. Both of Hadoop's
// encodings are read — the Writable one that clients send by default, and
// the protobuf one — and files are written in the protobuf encoding, which
// every Hadoop 3 reader accepts.
package credentials

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
)

const (
	magic          = "HDTS"
	formatWritable = 0x00
	formatProtobuf = 0x01
	maxEntries     = 1 << 16
	maxFieldLen    = 16 << 20
)

// Token is one delegation or service token.
type Token struct {
	Identifier, Password []byte
	Kind, Service        string
}

// Credentials are tokens and secrets by alias.
type Credentials struct {
	Tokens  map[string]Token
	Secrets map[string][]byte
}

// New returns empty credentials.
func New() *Credentials {
	return &Credentials{Tokens: map[string]Token{}, Secrets: map[string][]byte{}}
}

// Merge adds o's entries, replacing those with the same alias.
func (c *Credentials) Merge(o *Credentials) {
	for k, v := range o.Tokens {
		c.Tokens[k] = v
	}
	for k, v := range o.Secrets {
		c.Secrets[k] = v
	}
}

// ErrFormat reports storage that is not Hadoop token storage.
var ErrFormat = errors.New("credentials: not Hadoop token storage")

// Read parses token storage in either encoding.
func Read(r io.Reader) (*Credentials, error) {
	br := bufio.NewReader(r)
	var head [5]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if string(head[:4]) != magic {
		return nil, fmt.Errorf("%w: bad magic %q", ErrFormat, head[:4])
	}
	switch head[4] {
	case formatWritable:
		return readWritable(br)
	case formatProtobuf:
		return readProtobuf(br)
	default:
		return nil, fmt.Errorf("%w: unknown version %d", ErrFormat, head[4])
	}
}

// Parse is Read over bytes; empty input means no credentials.
func Parse(b []byte) (*Credentials, error) {
	if len(b) == 0 {
		return New(), nil
	}
	return Read(bytes.NewReader(b))
}

func readProtobuf(br *bufio.Reader) (*Credentials, error) {
	rest, err := io.ReadAll(io.LimitReader(br, maxFieldLen+16))
	if err != nil {
		return nil, err
	}
	n, l := protowire.ConsumeVarint(rest)
	if l < 0 || n > uint64(len(rest)-l) {
		return nil, fmt.Errorf("%w: bad length prefix", ErrFormat)
	}
	p := &commonpb.CredentialsProto{}
	if err := proto.Unmarshal(rest[l:l+int(n)], p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	c := New()
	for _, kv := range p.GetTokens() {
		t := kv.GetToken()
		c.Tokens[kv.GetAlias()] = Token{Identifier: t.GetIdentifier(), Password: t.GetPassword(), Kind: t.GetKind(), Service: t.GetService()}
	}
	for _, kv := range p.GetSecrets() {
		c.Secrets[kv.GetAlias()] = kv.GetSecret()
	}
	return c, nil
}

func readWritable(br *bufio.Reader) (*Credentials, error) {
	c := New()
	n, err := readCount(br)
	if err != nil {
		return nil, err
	}
	for range n {
		alias, err := readText(br)
		if err != nil {
			return nil, err
		}
		var t Token
		if t.Identifier, err = readBytes(br); err != nil {
			return nil, err
		}
		if t.Password, err = readBytes(br); err != nil {
			return nil, err
		}
		if t.Kind, err = readText(br); err != nil {
			return nil, err
		}
		if t.Service, err = readText(br); err != nil {
			return nil, err
		}
		c.Tokens[alias] = t
	}
	if n, err = readCount(br); err != nil {
		return nil, err
	}
	for range n {
		alias, err := readText(br)
		if err != nil {
			return nil, err
		}
		if c.Secrets[alias], err = readBytes(br); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Write writes c in the protobuf encoding, entries sorted by alias so the
// output is reproducible.
func (c *Credentials) Write(w io.Writer) error {
	p := &commonpb.CredentialsProto{}
	for _, alias := range sortedKeys(c.Tokens) {
		t := c.Tokens[alias]
		p.Tokens = append(p.Tokens, &commonpb.CredentialsKVProto{Alias: proto.String(alias), Token: &commonpb.TokenProto{
			Identifier: t.Identifier, Password: t.Password, Kind: proto.String(t.Kind), Service: proto.String(t.Service)}})
	}
	for _, alias := range sortedKeys(c.Secrets) {
		p.Secrets = append(p.Secrets, &commonpb.CredentialsKVProto{Alias: proto.String(alias), Secret: c.Secrets[alias]})
	}
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
	if err != nil {
		return err
	}
	out := append([]byte(magic), formatProtobuf)
	out = protowire.AppendVarint(out, uint64(len(body)))
	_, err = w.Write(append(out, body...))
	return err
}

// Bytes returns c in the protobuf encoding.
func (c *Credentials) Bytes() ([]byte, error) {
	var b bytes.Buffer
	err := c.Write(&b)
	return b.Bytes(), err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Hadoop's WritableUtils variable-length integers.

func readVLong(br *bufio.Reader) (int64, error) {
	first, err := br.ReadByte()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	b := int8(first)
	if b >= -112 {
		return int64(b), nil
	}
	negative := b < -120
	n := -112 - int(b)
	if negative {
		n = -120 - int(b)
	}
	var v int64
	for range n {
		x, err := br.ReadByte()
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		v = v<<8 | int64(x)
	}
	if negative {
		v = ^v
	}
	return v, nil
}

func readCount(br *bufio.Reader) (int, error) {
	n, err := readVLong(br)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > maxEntries {
		return 0, fmt.Errorf("%w: %d entries", ErrFormat, n)
	}
	return int(n), nil
}

func readBytes(br *bufio.Reader) ([]byte, error) {
	n, err := readVLong(br)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > maxFieldLen {
		return nil, fmt.Errorf("%w: field of %d bytes", ErrFormat, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return b, nil
}

func readText(br *bufio.Reader) (string, error) {
	b, err := readBytes(br)
	return string(b), err
}
