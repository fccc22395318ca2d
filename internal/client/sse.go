package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// A lineTooLongError is a line or an event's data past the reader's cap.
type lineTooLongError struct{ limit int }

func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("server sent an SSE line or event over %d bytes (Client.MaxLineBytes); stream closed", e.limit)
}

// An sseReader splits a server-sent-events stream into events as bytes
// arrive. It keeps no per-event allocations: the read buffer and the data
// buffer are reused, and an event's Data is valid until the next call to
// next.
//
// It follows the EventSource parsing rules: lines end in LF, CRLF or CR
// (a CR at the end of one read and the LF at the start of the next are one
// line end); a line starting with ':' is a comment (pings); "data:" with or
// without a following space; several data lines join with '\n'; "event:"
// sets the event type; a blank line ends the event. A stream that ends
// without a blank line still delivers its last event, because real servers
// do that.
type sseReader struct {
	r   io.Reader
	now func() time.Duration

	buf        []byte // read buffer; live bytes are buf[start:end]
	start, end int
	skipLF     bool // the previous line ended in CR at the end of a read
	eof        bool
	readErr    error

	data    []byte // data lines of the event being read
	hasData bool
	// one, when inBuf, is the event's only data line so far, still in
	// buf: most events are one line that arrives whole, and their data is
	// handed out where it lies instead of copied into data.
	one   []byte
	inBuf bool
	event []byte // event type of the event being read

	// limit caps a line and an event's data, in bytes; past it next
	// returns a *lineTooLongError.
	limit   int
	tooLong bool

	// at is the time of the read that delivered the newest bytes.
	at time.Duration
}

// An sseEvent is one dispatched event.
type sseEvent struct {
	// Type is the event type ("" when the stream set none).
	Type []byte
	// Data is the event's data, lines joined by '\n'.
	Data []byte
	// At is when the read that completed the event returned.
	At time.Duration
}

// initialReadBytes is the read buffer a stream starts with. With the own
// transport it is the stream's only buffer: the response head is read
// into it and the body decoded in place there (h1body.go); with net/http
// it matches the transport's own 4 KiB read buffer, which bounds what one
// read of a chunked body returns. 4 KiB holds a burst of events that
// arrived together, so they are read, and timed, together; a longer line
// grows it (see fill). An OpenAI chunk is a few hundred bytes. Memory per
// open stream is what bounds thousands of streams: a smaller buffer saves
// a little but splits such bursts over several reads, each with its own
// time.
const initialReadBytes = 4 << 10

// newSSEReader reads events from r into buf (grown as needed), gathering
// event data in data (grown as needed), with lines and events capped at
// limit bytes. The first buffered bytes of buf are already the stream's
// (read with the response head), arrived now. The buffers it grew are its
// buf and data fields after.
func newSSEReader(r io.Reader, now func() time.Duration, buf []byte, buffered int, data []byte, limit int) *sseReader {
	s := new(sseReader)
	s.reset(r, now, buf, buffered, data, limit)
	return s
}

// reset makes s a new reader, as newSSEReader does. (Not inlined: the
// new value would take room in the caller's frame; see DoPrepared.)
//
//go:noinline
func (s *sseReader) reset(r io.Reader, now func() time.Duration, buf []byte, buffered int, data []byte, limit int) {
	if cap(buf) == 0 {
		buf = make([]byte, initialReadBytes)
	}
	*s = sseReader{r: r, now: now, buf: buf[:cap(buf)], end: buffered, data: data[:0], limit: limit}
	if buffered > 0 {
		s.at = now()
	}
}

// peek returns up to n bytes of the stream ahead, reading until it has
// them or the stream ends.
func (s *sseReader) peek(n int) []byte {
	for s.end-s.start < n && !s.eof && !s.tooLong {
		s.fill()
	}
	return s.buf[s.start:min(s.end, s.start+n)]
}

// rest reads the stream from where the reader is, buffered bytes first.
func (s *sseReader) rest() io.Reader {
	if s.readErr != nil {
		return io.MultiReader(bytes.NewReader(s.buf[s.start:s.end]), errReader{s.readErr})
	}
	if s.eof {
		return bytes.NewReader(s.buf[s.start:s.end])
	}
	return io.MultiReader(bytes.NewReader(s.buf[s.start:s.end]), s.r)
}

// An errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// next returns the next event. At the end of the stream it returns io.EOF;
// a failed read returns that error after the complete events before it,
// dropping a partial one. A line or an event's data longer than the limit
// returns a *lineTooLongError, and so does every later call.
func (s *sseReader) next() (sseEvent, error) {
	for {
		if s.tooLong {
			return sseEvent{}, &lineTooLongError{s.limit}
		}
		line, ok := s.line()
		if !ok {
			if s.eof {
				if s.readErr != nil {
					// A broken connection: a partial event is not an event.
					return sseEvent{}, s.readErr
				}
				// A last line without a line end, then the pending event.
				if s.start < s.end {
					line = s.buf[s.start:s.end]
					s.start = s.end
					s.field(line)
				}
				if s.hasData {
					return s.dispatch(), nil
				}
				return sseEvent{}, io.EOF
			}
			s.fill()
			continue
		}
		if len(line) == 0 {
			if s.hasData {
				return s.dispatch(), nil
			}
			s.event = s.event[:0]
			continue
		}
		s.field(line)
	}
}

// dispatch hands out the pending event and resets the event state.
func (s *sseReader) dispatch() sseEvent {
	ev := sseEvent{Type: s.event, Data: s.data, At: s.at}
	if s.inBuf {
		ev.Data, s.one, s.inBuf = s.one, nil, false
	}
	s.data = s.data[:0]
	s.event = s.event[:0]
	s.hasData = false
	return ev
}

// line returns the next complete line without its line end, or false when
// the buffer holds no complete line.
func (s *sseReader) line() ([]byte, bool) {
	if s.skipLF && s.start < s.end {
		if s.buf[s.start] == '\n' {
			s.start++
		}
		s.skipLF = false
	}
	live := s.buf[s.start:s.end]
	// Two byte searches beat one IndexAny: LF ends most lines, and a CR
	// can only end the line if it comes before the LF.
	i := bytes.IndexByte(live, '\n')
	if i < 0 {
		i = bytes.IndexByte(live, '\r')
	} else if k := bytes.IndexByte(live[:i], '\r'); k >= 0 {
		i = k
	}
	if i < 0 {
		return nil, false
	}
	line := live[:i]
	s.start += i + 1
	if live[i] == '\r' {
		if i+1 < len(live) {
			if live[i+1] == '\n' {
				s.start++
			}
		} else if !s.eof {
			s.skipLF = true
		}
	}
	return line, true
}

// field applies one non-empty line to the pending event.
func (s *sseReader) field(line []byte) {
	if line[0] == ':' {
		return // comment or ping
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if !s.hasData {
			s.one, s.inBuf, s.hasData = value, true, true
			return
		}
		s.copyLine()
		if len(s.data)+len(value) > s.limit {
			s.tooLong = true
			return
		}
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
	case "event":
		s.event = append(s.event[:0], value...)
	}
}

// copyLine moves a data line held in buf into data, before the bytes in
// buf move.
func (s *sseReader) copyLine() {
	if s.inBuf {
		s.data = append(s.data[:0], s.one...)
		s.one, s.inBuf = nil, false
	}
}

// fill reads more bytes, first moving live bytes to the front and growing
// the buffer when one line fills it, up to the limit (plus room for the
// line end).
func (s *sseReader) fill() {
	s.copyLine()
	if s.start > 0 {
		n := copy(s.buf, s.buf[s.start:s.end])
		s.start, s.end = 0, n
	}
	if s.end == len(s.buf) {
		if len(s.buf) >= s.limit+2 {
			s.tooLong = true
			return
		}
		grown := make([]byte, min(2*len(s.buf), s.limit+2))
		copy(grown, s.buf[:s.end])
		s.buf = grown
	}
	n, err := s.r.Read(s.buf[s.end:])
	if n > 0 {
		s.at = s.now()
		s.end += n
	}
	if err != nil {
		s.eof = true
		if !errors.Is(err, io.EOF) {
			s.readErr = err
		}
	}
}
