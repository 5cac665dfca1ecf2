package ipc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Wire constants of Hadoop IPC version 9 (Hadoop 2.x and 3.x).
const (
	// protocolMagic opens every connection.
	protocolMagic = "hrpc"
	// CurrentVersion is the only IPC version Weft speaks.
	CurrentVersion = 9

	authProtocolNone = 0x00
	authProtocolSASL = 0xDF // -33 as a signed byte

	// Reserved call ids. Requests carry them as sint32; responses echo
	// them in a uint32 field, so -33 comes back as 0xFFFFFFDF.
	callIDConnectionContext int32 = -3
	callIDPing              int32 = -4
	callIDSASL              int32 = -33
	callIDInvalid           int32 = -2
	// callIDUnknown answers a client whose call id is not known yet
	// (a bad connection header), as Hadoop's server does.
	callIDUnknown int32 = -1

	// DefaultMaxFrameSize matches ipc.maximum.data.length (128 MiB).
	DefaultMaxFrameSize = 128 << 20
)

// errFrameTooLarge is returned for a length prefix beyond the limit; the
// connection cannot be resynchronized after it.
var errFrameTooLarge = errors.New("frame too large")

// preamble is the 7-byte connection header: "hrpc", version, service class,
// auth protocol.
type preamble struct {
	version      byte
	serviceClass byte
	authProtocol byte
}

// readPreamble reads the connection header. It reports isHTTP for a client
// that sent an HTTP request to the IPC port, which deserves a readable reply.
func readPreamble(r io.Reader) (p preamble, isHTTP bool, err error) {
	var b [7]byte
	if _, err := io.ReadFull(r, b[:4]); err != nil {
		return p, false, fmt.Errorf("read connection magic: %w", err)
	}
	switch string(b[:4]) {
	case protocolMagic:
	case "GET ", "POST", "HEAD", "PUT ":
		return p, true, nil
	default:
		return p, false, fmt.Errorf("bad connection magic %q", b[:4])
	}
	if _, err := io.ReadFull(r, b[4:]); err != nil {
		return p, false, fmt.Errorf("read connection header: %w", err)
	}
	return preamble{version: b[4], serviceClass: b[5], authProtocol: b[6]}, false, nil
}

// frameChunk is the most a frame's buffer is given before its bytes
// arrive.
const frameChunk = 64 << 10

// readFrame reads one length-prefixed frame, refusing lengths beyond max
// before allocating anything. The buffer grows as the bytes arrive, not
// to the announced length at once: a client announcing 128 MiB and
// sending nothing costs the server 64 KiB, not 128 MiB (Hadoop's server
// allocates the announced length: 48 such connections cost it 5.4 GB).
func readFrame(r *bufio.Reader, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	if n < 0 || int64(n) > int64(max) {
		return nil, fmt.Errorf("%w: RPC data length %d outside [0, %d]", errFrameTooLarge, n, max)
	}
	if n <= frameChunk {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("read frame of %d bytes: %w", n, err)
		}
		return buf, nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, frameChunk))
	if got, err := io.CopyN(buf, r, int64(n)); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read frame of %d bytes (%d arrived): %w", n, got, err)
	}
	return buf.Bytes(), nil
}

// consumeDelimited unmarshals one varint-length-delimited message from b into
// m and returns the rest of b.
func consumeDelimited(b []byte, m proto.Message) ([]byte, error) {
	n, l := protowire.ConsumeVarint(b)
	if l < 0 {
		return nil, fmt.Errorf("bad length prefix: %w", protowire.ParseError(l))
	}
	b = b[l:]
	if n > uint64(len(b)) {
		return nil, fmt.Errorf("delimited message of %d bytes exceeds the %d left in the frame", n, len(b))
	}
	if err := proto.Unmarshal(b[:n], m); err != nil {
		return nil, fmt.Errorf("unmarshal %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return b[n:], nil
}

// appendDelimited appends m to b with a varint length prefix.
func appendDelimited(b []byte, m proto.Message) ([]byte, error) {
	size := proto.Size(m)
	b = protowire.AppendVarint(b, uint64(size))
	return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
}

// encodeFrame builds one length-prefixed frame from delimited messages.
func encodeFrame(msgs ...proto.Message) ([]byte, error) {
	b := make([]byte, 4, 64)
	var err error
	for _, m := range msgs {
		if b, err = appendDelimited(b, m); err != nil {
			return nil, err
		}
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, nil
}
