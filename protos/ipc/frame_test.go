package ipc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
)

func framed(announced int32, body []byte) *bufio.Reader {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, announced)
	b.Write(body)
	return bufio.NewReader(&b)
}

// TestReadFrame: frames of every size come back whole; a frame whose
// bytes never arrive costs what arrived, not what was announced; lengths
// outside the limit are refused before anything is read.
func TestReadFrame(t *testing.T) {
	for _, n := range []int{0, 1, frameChunk - 1, frameChunk, frameChunk + 1, 3*frameChunk + 7} {
		body := bytes.Repeat([]byte{0xab}, n)
		got, err := readFrame(framed(int32(n), body), DefaultMaxFrameSize)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("frame of %d bytes: %d back, %v", n, len(got), err)
		}
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := readFrame(framed(DefaultMaxFrameSize, []byte("only this")), DefaultMaxFrameSize)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a frame cut short: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("a 128 MiB frame of which 9 bytes arrived allocated %d bytes", alloc)
	}

	for _, n := range []int32{-1, DefaultMaxFrameSize + 1} {
		if _, err := readFrame(framed(n, nil), DefaultMaxFrameSize); !errors.Is(err, errFrameTooLarge) {
			t.Errorf("length %d: %v", n, err)
		}
	}
}
