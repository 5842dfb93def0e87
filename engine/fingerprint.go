package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"github.com/mcpfleet/mcp/model"
)

// encodeFleet writes to w exactly what json.NewEncoder(w).Encode(f) writes — the bytes
// Fingerprint digests — an element at a time, so that a fleet of 100,000 nodes is not
// first encoded into one buffer of tens of megabytes (grown, copied and cleared several
// times over). TestEncodeFleet holds it to the encoder's bytes and to Fleet's fields.
func encodeFleet(w io.Writer, f *model.Fleet) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	elem := func(v any) error { // v's JSON, without the encoder's newline
		buf.Reset()
		if err := enc.Encode(v); err != nil {
			return err
		}
		_, err := bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		return err
	}
	list := func(key string, n int, isNil, omitEmpty bool, at func(i int) any) error {
		if omitEmpty && n == 0 {
			return nil
		}
		bw.WriteString(key)
		if isNil {
			bw.WriteString("null")
			return nil
		}
		bw.WriteByte('[')
		for i := 0; i < n; i++ {
			if i > 0 {
				bw.WriteByte(',')
			}
			if err := elem(at(i)); err != nil {
				return err
			}
		}
		bw.WriteByte(']')
		return nil
	}
	if err := list(`{"nodes":`, len(f.Nodes), f.Nodes == nil, false, func(i int) any { return &f.Nodes[i] }); err != nil {
		return err
	}
	if err := list(`,"pods":`, len(f.Pods), false, true, func(i int) any { return &f.Pods[i] }); err != nil {
		return err
	}
	if err := list(`,"pdbs":`, len(f.PDBs), false, true, func(i int) any { return &f.PDBs[i] }); err != nil {
		return err
	}
	if err := list(`,"templates":`, len(f.Templates), false, true, func(i int) any { return &f.Templates[i] }); err != nil {
		return err
	}
	if err := list(`,"user_data":`, len(f.UserData), false, true, func(i int) any { return &f.UserData[i] }); err != nil {
		return err
	}
	bw.WriteString("}\n")
	return bw.Flush()
}
