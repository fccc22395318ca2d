package sim

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// httpMetrics are the http_* families that vLLM's API server exports
// through prometheus-fastapi-instrumentator: requests by handler, method
// and status class, request and response sizes, and durations (to the end
// of the response body, streams included).
type httpMetrics struct {
	mu        sync.Mutex
	requests  map[[3]string]*httpSeries // handler, method, status class
	reqOrder  [][3]string
	sizes     map[string]*httpSizes // by handler
	sizeOrder []string
	durations map[[2]string]*httpSeries // handler, method
	durOrder  [][2]string
	highr     *histogram
	highrAt   time.Time
}

// httpSeries is one labelled series: a count, or a histogram, and when it
// was first seen (its _created gauge).
type httpSeries struct {
	n       int64
	hist    *histogram
	created time.Time
}

// httpSizes are the two summaries of one handler, which count the same
// requests: their count, the sums of request and response sizes, and when
// the handler was first seen.
type httpSizes struct {
	n       int64
	sums    [2]float64 // request, response
	created time.Time
}

// The instrumentator's duration buckets: many for the unlabelled
// histogram, few for the one by handler.
var (
	highrBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 7.5, 10, 30, 60}
	handlerBucket = []float64{0.1, 0.5, 1}
)

// httpExcluded are the paths vLLM leaves out of the http_* metrics.
var httpExcluded = map[string]bool{"/metrics": true, "/health": true, "/load": true, "/ping": true, "/version": true, "/server_info": true}

func newHTTPMetrics() httpMetrics {
	return httpMetrics{
		requests:  map[[3]string]*httpSeries{},
		sizes:     map[string]*httpSizes{},
		durations: map[[2]string]*httpSeries{},
		highr:     newHistogram(highrBuckets),
		highrAt:   time.Now(),
	}
}

// instrument wraps a response writer so that the request is counted when
// it is done: call the returned function after the handler returns. Paths
// that are not routes (the catch-all handler marks them) count under the
// handler "none", as the instrumentator counts untemplated paths.
func (m *metrics) instrument(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
	if httpExcluded[r.URL.Path] || strings.HasPrefix(r.URL.Path, "/debug/") {
		return w, func() {}
	}
	rw := &countingWriter{ResponseWriter: w, status: http.StatusOK}
	start := time.Now()
	reqSize, _ := strconv.ParseFloat(r.Header.Get("Content-Length"), 64)
	return rw, func() {
		d := time.Since(start).Seconds()
		// "Only value of header is respected": a stream has no
		// Content-Length, so it counts as 0 bytes.
		respSize := float64(rw.n)
		if rw.streamed {
			respSize = 0
		}
		handler := r.URL.Path
		if rw.unrouted {
			handler = "none"
		}
		m.http.observe(handler, r.Method, rw.status, reqSize, respSize, d)
	}
}

func (h *httpMetrics) observe(handler, method string, status int, reqSize, respSize, d float64) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	rk := [3]string{handler, method, strconv.Itoa(status/100) + "xx"}
	rs := h.requests[rk]
	if rs == nil {
		rs = &httpSeries{created: now}
		h.requests[rk] = rs
		h.reqOrder = append(h.reqOrder, rk)
	}
	rs.n++
	sz := h.sizes[handler]
	if sz == nil {
		sz = &httpSizes{created: now}
		h.sizes[handler] = sz
		h.sizeOrder = append(h.sizeOrder, handler)
	}
	sz.n++
	sz.sums[0] += reqSize
	sz.sums[1] += respSize
	h.highr.observe(d)
	dk := [2]string{handler, method}
	ds := h.durations[dk]
	if ds == nil {
		ds = &httpSeries{hist: newHistogram(handlerBucket), created: now}
		h.durations[dk] = ds
		h.durOrder = append(h.durOrder, dk)
	}
	ds.hist.observe(d)
}

// write renders the http_* families as prometheus_client does, series in
// the order they were first seen.
func (h *httpMetrics) write(w io.Writer, created string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	unix := func(t time.Time) string { return num(float64(t.UnixNano()) / 1e9) }
	family := func(name, help, typ string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	const reqHelp = "Total number of requests by method, status and handler."
	family("http_requests_total", reqHelp, "counter")
	for _, k := range h.reqOrder {
		fmt.Fprintf(w, "http_requests_total{handler=%q,method=%q,status=%q} %s\n", k[0], k[1], k[2], num(float64(h.requests[k].n)))
	}
	family("http_requests_created", reqHelp, "gauge")
	for _, k := range h.reqOrder {
		fmt.Fprintf(w, "http_requests_created{handler=%q,method=%q,status=%q} %s\n", k[0], k[1], k[2], unix(h.requests[k].created))
	}
	for i, side := range [2]struct{ name, help string }{ // in httpSizes.sums order
		{"http_request_size_bytes", "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. "},
		{"http_response_size_bytes", "Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. "},
	} {
		family(side.name, side.help, "summary")
		for _, handler := range h.sizeOrder {
			sz := h.sizes[handler]
			fmt.Fprintf(w, "%s_count{handler=%q} %s\n%s_sum{handler=%q} %s\n", side.name, handler, num(float64(sz.n)), side.name, handler, num(sz.sums[i]))
		}
		family(side.name+"_created", side.help, "gauge")
		for _, handler := range h.sizeOrder {
			fmt.Fprintf(w, "%s_created{handler=%q} %s\n", side.name, handler, unix(h.sizes[handler].created))
		}
	}
	const highrHelp = "Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. "
	family("http_request_duration_highr_seconds", highrHelp, "histogram")
	h.highr.writeSeries(w, "http_request_duration_highr_seconds", "", "")
	family("http_request_duration_highr_seconds_created", highrHelp, "gauge")
	fmt.Fprintf(w, "http_request_duration_highr_seconds_created %s\n", unix(h.highrAt))
	const durHelp = "Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. "
	family("http_request_duration_seconds", durHelp, "histogram")
	for _, k := range h.durOrder {
		h.durations[k].hist.writeSeries(w, "http_request_duration_seconds", fmt.Sprintf("handler=%q,", k[0]), fmt.Sprintf(",method=%q", k[1]))
	}
	family("http_request_duration_seconds_created", durHelp, "gauge")
	for _, k := range h.durOrder {
		fmt.Fprintf(w, "http_request_duration_seconds_created{handler=%q,method=%q} %s\n", k[0], k[1], unix(h.durations[k].created))
	}
}

// countingWriter counts the bytes and keeps the status a handler wrote,
// whether it streamed (flushed) the body, and whether the request matched
// no route.
type countingWriter struct {
	http.ResponseWriter
	status   int
	n        int64
	wrote    bool
	streamed bool
	unrouted bool
}

func (c *countingWriter) WriteHeader(status int) {
	if !c.wrote {
		c.status, c.wrote = status, true
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	c.wrote = true
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Flush() {
	c.streamed = true
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// writeProcessMetrics writes prometheus_client's process_* families from
// /proc, where there is one (Linux); elsewhere nothing. The python_*
// families of vLLM's Python runtime have no counterpart here.
func writeProcessMetrics(w io.Writer) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return
	}
	// Fields after the command name, which is in parentheses.
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 22 {
		return
	}
	const ticks = 100.0 // USER_HZ on Linux
	pageSize := float64(os.Getpagesize())
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	startTicks, _ := strconv.ParseFloat(f[19], 64)
	vsize, _ := strconv.ParseFloat(f[20], 64)
	rss, _ := strconv.ParseFloat(f[21], 64)
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name, num(v))
	}
	gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", vsize)
	gauge("process_resident_memory_bytes", "Resident memory size in bytes.", rss*pageSize)
	if boot := bootTime(); boot > 0 {
		gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", boot+startTicks/ticks)
	}
	fmt.Fprintf(w, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %s\n", num((utime+stime)/ticks))
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		gauge("process_open_fds", "Number of open file descriptors.", float64(len(fds)))
	}
	if lim := maxFDs(); lim > 0 {
		gauge("process_max_fds", "Maximum number of open file descriptors.", lim)
	}
}

// bootTime is the machine's boot time, Unix seconds, from /proc/stat.
func bootTime() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			t, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return t
		}
	}
	return 0
}

// maxFDs is the soft limit on open files, from /proc/self/limits.
func maxFDs() float64 {
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			f := strings.Fields(strings.TrimPrefix(line, "Max open files"))
			if len(f) > 0 {
				v, _ := strconv.ParseFloat(f[0], 64)
				return v
			}
		}
	}
	return 0
}
