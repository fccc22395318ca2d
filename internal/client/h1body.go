package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// This file reads an HTTP/1.1 response for the client's own transport
// (h1.go): the head, then the body, decoded in place in the stream's one
// read buffer.

// MaxHeaderBytes caps a response's head (status line and header fields,
// each 1xx head counted on its own): past it the request fails as a
// transport failure and the connection is closed.
const MaxHeaderBytes = 64 << 10

// max1xx is how many informational (1xx) heads a response may start
// with, as net/http allows.
const max1xx = 5

// A respHead is what the client needs of a response head.
type respHead struct {
	status      int
	contentType string
	// length is the Content-Length, -1 when none was sent.
	length  int64
	chunked bool
	// close is true when the server will close the connection after this
	// response (Connection: close, HTTP/1.0 without keep-alive).
	close bool
}

// noBody reports whether a response with this status has no body
// whatever its header says (RFC 9112, section 6.3).
func (h *respHead) noBody() bool {
	return h.status/100 == 1 || h.status == 204 || h.status == 304
}

// readHead reads the final response head from conn into buf, grown as
// needed up to MaxHeaderBytes, skipping 1xx heads. It returns the head,
// the buffer it used and the number of body bytes read with the head,
// moved to the buffer's front.
func readHead(conn net.Conn, buf []byte) (respHead, []byte, int, error) {
	var (
		pos, end int // the current head starts at pos; bytes end at end
		scan     int // lines before scan hold no blank line
		infos    int
	)
	for {
		if i := headEnd(buf[:end], pos, &scan); i >= 0 {
			h, err := parseHead(buf[pos:i])
			if err != nil {
				return h, buf, 0, err
			}
			pos, scan = i, i
			if h.status/100 == 1 {
				if h.status == 101 {
					return h, buf, 0, errors.New("read response: unexpected 101 Switching Protocols")
				}
				if infos++; infos > max1xx {
					return h, buf, 0, fmt.Errorf("read response: more than %d informational (1xx) answers", max1xx)
				}
				continue
			}
			return h, buf, copy(buf, buf[pos:end]), nil
		}
		if end-pos > MaxHeaderBytes {
			return respHead{}, buf, 0, fmt.Errorf("read response: header block over %d bytes (client.MaxHeaderBytes); connection closed", MaxHeaderBytes)
		}
		if end == len(buf) {
			if pos > 0 {
				end = copy(buf, buf[pos:end])
				scan -= pos
				pos = 0
			} else {
				grown := make([]byte, min(2*len(buf), MaxHeaderBytes+2))
				copy(grown, buf[:end])
				buf = grown
			}
		}
		n, err := conn.Read(buf[end:])
		end += n
		if err != nil {
			if errors.Is(err, io.EOF) {
				if end == pos {
					return respHead{}, buf, 0, errors.New("read response: server closed the connection before answering (EOF)")
				}
				err = fmt.Errorf("server closed the connection in the middle of the response head: %w", io.ErrUnexpectedEOF)
			}
			return respHead{}, buf, 0, fmt.Errorf("read response: %w", err)
		}
	}
}

// headEnd returns the end of the head that starts at pos in b (the index
// after its blank line), or -1 when b holds no blank line yet. Lines end
// in LF or CRLF. *scan, the start of the first line not yet looked at,
// carries over between calls so that a head trickled a byte at a time is
// still scanned once.
func headEnd(b []byte, pos int, scan *int) int {
	for {
		j := bytes.IndexByte(b[*scan:], '\n')
		if j < 0 {
			return -1
		}
		line := b[*scan : *scan+j]
		start := *scan
		*scan += j + 1
		if start > pos && (len(line) == 0 || (len(line) == 1 && line[0] == '\r')) {
			return *scan
		}
	}
}

// parseHead parses a head (status line and fields, ending in its blank
// line).
func parseHead(b []byte) (respHead, error) {
	h := respHead{length: -1}
	line, rest := nextLine(b)
	// "HTTP/1.1 200 OK": the version, a space, three digits, then a space
	// and a reason phrase, or nothing.
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return h, fmt.Errorf("read response: malformed status line %q", truncate(line, 100))
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil || status < 100 {
		return h, fmt.Errorf("read response: malformed status code in %q", truncate(line, 100))
	}
	h.status = status
	http10 := line[7] == '0'
	keepAlive := false
	for len(rest) > 0 {
		line, rest = nextLine(rest)
		if len(line) == 0 {
			continue // the blank line
		}
		// A field line is a token, a colon and the value; net/http refuses
		// a line without a colon or a name of other bytes, and so does
		// this. Spaces before the colon net/http takes; they are dropped,
		// as RFC 9112 (section 5.1) has a proxy drop them, so that
		// "Transfer-Encoding : chunked" frames the body as the server
		// meant. A name with spaces inside names no field read here.
		name, value, ok := bytes.Cut(line, []byte(":"))
		name = bytes.TrimRight(name, " ")
		if !ok || !responseFieldName(name) {
			return h, fmt.Errorf("read response: malformed header line %q", truncate(line, 100))
		}
		value = bytes.TrimSpace(value)
		// Lines starting with a space or tab continue the value (obs-fold),
		// which a client joins with a space (RFC 9112, section 5.2).
		for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
			var more []byte
			more, rest = nextLine(rest)
			value = append(append(append([]byte(nil), value...), ' '), bytes.TrimSpace(more)...)
		}
		switch {
		case bytes.EqualFold(name, []byte("Content-Type")):
			if h.contentType == "" {
				h.contentType = contentType(value)
			}
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || !digits(value) || (h.length >= 0 && h.length != n) {
				return h, fmt.Errorf("read response: bad Content-Length %q", truncate(value, 100))
			}
			h.length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			// Only chunked is decoded: a body under another coding (gzip,
			// chunked) would reach the SSE parser still encoded.
			chunked := false
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				switch tok = bytes.TrimSpace(tok); {
				case !chunked && bytes.EqualFold(tok, []byte("chunked")):
					chunked = true
				case !chunked && bytes.EqualFold(tok, []byte("identity")):
				default:
					return h, fmt.Errorf("read response: unsupported transfer encoding %q", truncate(value, 100))
				}
			}
			h.chunked = h.chunked || chunked
		case bytes.EqualFold(name, []byte("Connection")):
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				tok = bytes.TrimSpace(tok)
				h.close = h.close || bytes.EqualFold(tok, []byte("close"))
				keepAlive = keepAlive || bytes.EqualFold(tok, []byte("keep-alive"))
			}
		}
	}
	if http10 && !keepAlive {
		h.close = true
	}
	if h.chunked && h.length >= 0 {
		// Both framings: chunked wins, and the connection is not trusted
		// after (RFC 9112, section 6.3).
		h.length, h.close = -1, true
	}
	return h, nil
}

// responseFieldName reports whether b is a field name as net/http reads
// one in a response: a token, spaces allowed after its first byte.
func responseFieldName(b []byte) bool {
	for i, c := range b {
		if !tokenByte(c) && (c != ' ' || i == 0) {
			return false
		}
	}
	return len(b) > 0
}

// digits reports whether b is one or more decimal digits, as a
// Content-Length must be (ParseInt also takes a sign).
func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// nextLine splits b after its first line, dropping the line end.
func nextLine(b []byte) (line, rest []byte) {
	line, rest, _ = bytes.Cut(b, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest
}

// contentType returns a Content-Type value as a string, without
// allocating for the two types every stream answers with.
func contentType(v []byte) string {
	for _, s := range []string{"text/event-stream", "application/json"} {
		if string(v) == s {
			return s
		}
	}
	return string(v)
}

// Body framings.
const (
	bodyNone    = iota // no body (204, 304, Content-Length 0)
	bodyLength         // Content-Length bytes
	bodyChunked        // Transfer-Encoding: chunked
	bodyClose          // until the server closes the connection
)

// Chunked framing states.
const (
	chunkSize     = iota // in the hex digits of a chunk-size line
	chunkExt             // in a chunk extension, until LF
	chunkSizeLF          // after the size line's CR
	chunkData            // in chunk data
	chunkDataCR          // after chunk data, want CR
	chunkDataLF          // after chunk data and CR, want LF
	chunkTrailer         // at the start of a trailer line
	chunkTrailing        // in a trailer line, until LF
	chunkEndLF           // after the final blank line's CR
)

// maxChunkLine caps a chunk-size line with its extensions, as net/http
// does.
const maxChunkLine = 4 << 10

// maxChunkDigits caps a chunk size's significant hex digits (16^10
// bytes is 1 TiB).
const maxChunkDigits = 10

// An h1Body reads a response body from its connection. With chunked
// framing it decodes in place: Read reads raw bytes into p and moves the
// chunk data over the framing, so that the caller's buffer is the only
// one. The framing state is a few integers, so chunk-size lines, CRLFs
// and trailers may be split across reads anywhere. Errors are sticky.
type h1Body struct {
	conn io.Reader
	mode int
	// left is what remains of the body (bodyLength) or of the current
	// chunk's data (bodyChunked).
	left  int64
	state int
	// digits counts the current size line's hex digits; line its bytes,
	// and trailer the trailer's.
	digits, line, trailer int
	done                  bool // the body was read to its end
	// extra is true when the server sent bytes after the body: the
	// connection is out of step and must not be reused.
	extra bool
	err   error
}

// start sets the body's framing from the head and decodes the n body
// bytes read with the head, at buf's front, in place. It returns how many
// decoded body bytes are at buf's front.
func (b *h1Body) start(conn io.Reader, h respHead, buf []byte, n int) (int, error) {
	*b = h1Body{conn: conn, left: h.length}
	switch {
	case h.noBody() || h.length == 0:
		b.mode, b.done = bodyNone, true
	case h.chunked:
		b.mode, b.left = bodyChunked, 0
	case h.length > 0:
		b.mode = bodyLength
	default:
		b.mode = bodyClose
	}
	if n == 0 {
		return 0, nil
	}
	m, err := b.decode(buf[:n])
	if err != nil {
		b.err = err
	}
	return m, err
}

// decode turns n raw bytes into body bytes in place and returns how many
// there are.
func (b *h1Body) decode(p []byte) (int, error) {
	switch b.mode {
	case bodyNone:
		b.extra = true
		return 0, nil
	case bodyLength:
		if int64(len(p)) >= b.left {
			b.extra = int64(len(p)) > b.left
			n := int(b.left)
			b.left, b.done = 0, true
			return n, nil
		}
		b.left -= int64(len(p))
		return len(p), nil
	case bodyClose:
		return len(p), nil
	}
	return b.dechunk(p)
}

// dechunk decodes chunked framing in p in place: the chunk data moves to
// the front, the framing goes.
func (b *h1Body) dechunk(p []byte) (int, error) {
	w := 0
	for r := 0; r < len(p); {
		if b.done {
			b.extra = true
			return w, nil
		}
		if b.state == chunkData {
			k := int(min(b.left, int64(len(p)-r)))
			copy(p[w:], p[r:r+k])
			w, r = w+k, r+k
			if b.left -= int64(k); b.left == 0 {
				b.state = chunkDataCR
			}
			continue
		}
		c := p[r]
		r++
		if err := b.frame(c); err != nil {
			return w, err
		}
	}
	return w, nil
}

// frame takes one byte of chunked framing.
func (b *h1Body) frame(c byte) error {
	switch b.state {
	case chunkSize:
		if b.line++; b.line > maxChunkLine {
			return errors.New("read body: malformed chunked encoding: chunk-size line too long")
		}
		switch v := unhex(c); {
		case v >= 0:
			// Leading zeros are valid (1*HEXDIG): only significant
			// digits count against the cap, which keeps the size from
			// overflowing; maxChunkLine bounds the zeros.
			if b.left >= 1<<(4*(maxChunkDigits-1)) {
				return fmt.Errorf("read body: malformed chunked encoding: chunk size of over %d hex digits", maxChunkDigits)
			}
			b.digits++
			b.left = b.left<<4 | int64(v)
		case b.digits > 0 && (c == ';' || c == ' ' || c == '\t'):
			b.state = chunkExt
		case b.digits > 0 && c == '\r':
			b.state = chunkSizeLF
		case b.digits > 0 && c == '\n':
			b.sizeDone()
		default:
			return fmt.Errorf("read body: malformed chunked encoding: bad chunk size (byte %q)", c)
		}
	case chunkExt:
		if b.line++; b.line > maxChunkLine {
			return errors.New("read body: malformed chunked encoding: chunk-size line too long")
		}
		if c == '\n' {
			b.sizeDone()
		}
	case chunkSizeLF:
		if c != '\n' {
			return fmt.Errorf("read body: malformed chunked encoding: CR without LF after the chunk size (byte %q)", c)
		}
		b.sizeDone()
	case chunkDataCR, chunkDataLF:
		want := byte('\n')
		if b.state == chunkDataCR {
			want = '\r'
		}
		if c != want {
			return fmt.Errorf("read body: malformed chunked encoding: chunk data not followed by CRLF (byte %q)", c)
		}
		if b.state++; b.state > chunkDataLF {
			b.state, b.left, b.digits, b.line = chunkSize, 0, 0, 0
		}
	case chunkTrailer, chunkTrailing, chunkEndLF:
		if b.trailer++; b.trailer > MaxHeaderBytes {
			return fmt.Errorf("read body: trailer over %d bytes", MaxHeaderBytes)
		}
		switch {
		case c == '\n' && b.state != chunkTrailing:
			b.done = true
		case c == '\n':
			b.state = chunkTrailer
		case b.state == chunkEndLF:
			return fmt.Errorf("read body: malformed chunked encoding: CR without LF after the trailer (byte %q)", c)
		case c == '\r' && b.state == chunkTrailer:
			b.state = chunkEndLF
		default:
			b.state = chunkTrailing
		}
	}
	return nil
}

// sizeDone ends a chunk-size line: data follows, or the trailer after
// the last chunk.
func (b *h1Body) sizeDone() {
	if b.left == 0 {
		b.state = chunkTrailer
		return
	}
	b.state = chunkData
}

// unhex is a hex digit's value, or -1.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// Read reads body bytes into p: raw bytes from the connection, decoded in
// place. It returns io.EOF at the end of the body and a clear error when
// the connection ends before it.
func (b *h1Body) Read(p []byte) (int, error) {
	for {
		if b.err != nil {
			return 0, b.err
		}
		if b.done {
			return 0, io.EOF
		}
		if len(p) == 0 {
			return 0, nil
		}
		q := p
		if b.mode == bodyLength && int64(len(q)) > b.left {
			q = q[:b.left]
		}
		n, err := b.conn.Read(q)
		m := 0
		if n > 0 {
			m, b.err = b.decode(q[:n])
		}
		if err != nil && b.err == nil {
			b.err = b.readError(err)
		}
		if m > 0 {
			return m, nil
		}
	}
}

// readError is the sticky error after a failed read: the end of a
// close-delimited body is its EOF; any other EOF comes too early.
func (b *h1Body) readError(err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	switch b.mode {
	case bodyClose:
		b.done = true
		return nil
	case bodyLength:
		return fmt.Errorf("read body: server closed the connection %d bytes before the end of the body (Content-Length): %w", b.left, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("read body: server closed the connection before the end of the chunked body: %w", io.ErrUnexpectedEOF)
}
