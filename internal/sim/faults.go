package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// FaultHeader is the request header that injects a fault into that one
// request, as comma-separated key=value pairs:
//
//	status=429|500|503     answer with that HTTP status and vLLM's error JSON
//	abort_after=K          cut the stream (no [DONE], connection closed) after K chunks
//	stall_ms=D             pause D milliseconds ...
//	stall_after=K          ... after K chunks (default 1)
//	malformed_after=K      send chunk number K (0-based) as invalid JSON
//	error_after=K          after K chunks, send vLLM's in-stream error event and [DONE]
//
// Configured fault rates (fault_rate_429, fault_abort_rate, ...) draw the
// same faults at random, seeded by the server seed and the request id.
const FaultHeader = "X-Servegate-Fault"

// A fault is what goes wrong with one request; the zero value is nothing.
type fault struct {
	status         int
	abortAfter     int // -1 none
	stall          time.Duration
	stallAfter     int
	malformedAfter int // -1 none
	errorAfter     int // -1 none
}

func noFault() fault { return fault{abortAfter: -1, malformedAfter: -1, errorAfter: -1} }

func (f fault) String() string {
	var parts []string
	if f.status != 0 {
		parts = append(parts, fmt.Sprintf("status=%d", f.status))
	}
	if f.abortAfter >= 0 {
		parts = append(parts, fmt.Sprintf("abort_after=%d", f.abortAfter))
	}
	if f.stall > 0 {
		parts = append(parts, fmt.Sprintf("stall_ms=%g,stall_after=%d", float64(f.stall)/1e6, f.stallAfter))
	}
	if f.malformedAfter >= 0 {
		parts = append(parts, fmt.Sprintf("malformed_after=%d", f.malformedAfter))
	}
	if f.errorAfter >= 0 {
		parts = append(parts, fmt.Sprintf("error_after=%d", f.errorAfter))
	}
	return strings.Join(parts, ",")
}

// parseFault reads the fault header.
func parseFault(h string) (fault, error) {
	f := noFault()
	f.stallAfter = 1
	if strings.TrimSpace(h) == "" {
		return f, nil
	}
	for _, kv := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return f, fmt.Errorf("%s: %q is not key=value", FaultHeader, kv)
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || n < 0 {
			return f, fmt.Errorf("%s: %s=%q is not a non-negative number", FaultHeader, k, v)
		}
		switch strings.TrimSpace(k) {
		case "status":
			if n < 400 || n > 599 {
				return f, fmt.Errorf("%s: status=%v is not an HTTP error status", FaultHeader, n)
			}
			f.status = int(n)
		case "abort_after":
			f.abortAfter = int(n)
		case "stall_ms":
			f.stall = time.Duration(n * float64(time.Millisecond))
		case "stall_after":
			f.stallAfter = int(n)
		case "malformed_after":
			f.malformedAfter = int(n)
		case "error_after":
			f.errorAfter = int(n)
		default:
			return f, fmt.Errorf("%s: unknown key %q (status, abort_after, stall_ms, stall_after, malformed_after, error_after)", FaultHeader, k)
		}
	}
	return f, nil
}

// drawFault adds the configured random faults to f.
func (p Params) drawFault(f fault, requestID string) fault {
	rng := rand.New(rand.NewPCG(seedOf(p.Seed, "fault/"+requestID), 0xfa017))
	if f.status == 0 {
		u := rng.Float64()
		switch {
		case u < p.FaultRate429:
			f.status = 429
		case u < p.FaultRate429+p.FaultRate500:
			f.status = 500
		case u < p.FaultRate429+p.FaultRate500+p.FaultRate503:
			f.status = 503
		}
	}
	if f.abortAfter < 0 && rng.Float64() < p.FaultAbortRate {
		f.abortAfter = p.FaultAbortAfter
	}
	if f.stall == 0 && rng.Float64() < p.FaultStallRate {
		f.stall = time.Duration(p.FaultStallMS * float64(time.Millisecond))
		f.stallAfter = p.FaultStallAfter
	}
	if f.malformedAfter < 0 && rng.Float64() < p.FaultMalformedRate {
		f.malformedAfter = p.FaultMalformedAfter
	}
	if f.errorAfter < 0 && rng.Float64() < p.FaultErrorRate {
		f.errorAfter = p.FaultErrorAfter
	}
	return f
}

// faultMessage is the error text of an injected status.
func faultMessage(status int) string {
	switch status {
	case 429:
		return "The server is overloaded: too many requests (injected by the simulator)."
	case 503:
		return "The server is not ready or is shutting down (injected by the simulator)."
	default:
		return "Internal server error (injected by the simulator)."
	}
}

// streamError is the event vLLM sends when generation fails mid-stream:
// the error JSON written by Python's json.dumps (with its spaces), followed
// by [DONE].
func streamError(status int, message string) []byte {
	msg := marshal(message)
	return []byte(fmt.Sprintf(`data: {"error": {"message": %s, "type": %q, "param": null, "code": %d}}`+"\n\n", msg, errorType(status), status))
}
