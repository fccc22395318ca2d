package sim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Embeddings and rerank are pooling requests: the engine prefills their
// tokens (in the same batches as generation) and they finish when the
// prefill does, without generating.

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

type embeddingData struct {
	Index     int    `json:"index"`
	Object    string `json:"object"`
	Embedding any    `json:"embedding"`
}

type embeddingResponse struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Data    []embeddingData `json:"data"`
	Usage   *usage          `json:"usage"`
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	var req embeddingRequest
	if err := decodeBody(r, &req, maxPoolingBody); err != nil {
		writeErr(w, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		writeErr(w, err)
		return
	}
	inputs, err := s.embeddingInputs(req.Input)
	if err != nil {
		writeErr(w, err)
		return
	}
	dim := s.p.EmbeddingDim
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > dim {
			writeError(w, newError(http.StatusBadRequest, "dimensions must be in [1, %d], got %d", dim, *req.Dimensions))
			return
		}
		dim = *req.Dimensions
	}
	var all []int
	for _, in := range inputs {
		all = append(all, in...)
	}
	rid := s.requestID(r)
	if !s.pool(w, r, rid, arrival, all) {
		return
	}
	resp := embeddingResponse{ID: "embd-" + rid, Object: "list", Created: arrival.Unix(), Model: s.p.Model,
		Usage: newUsage(len(all), 0).full()}
	for i, in := range inputs {
		vec := embedding(in, dim)
		var e any = vec
		if req.EncodingFormat == "base64" {
			buf := make([]byte, 4*len(vec))
			for k, f := range vec {
				binary.LittleEndian.PutUint32(buf[4*k:], math.Float32bits(f))
			}
			e = base64.StdEncoding.EncodeToString(buf)
		}
		resp.Data = append(resp.Data, embeddingData{Index: i, Object: "embedding", Embedding: e})
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) embeddingInputs(raw json.RawMessage) ([][]int, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil && text != "" {
		if err := s.checkInputBytes(len(text)); err != nil {
			return nil, err
		}
		return [][]int{s.tk.Encode(text, true)}, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil && len(texts) > 0 {
		var out [][]int
		for _, t := range texts {
			if err := s.checkInputBytes(len(t)); err != nil {
				return nil, err
			}
			out = append(out, s.tk.Encode(t, true))
		}
		return out, nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return [][]int{ids}, nil
	}
	var idss [][]int
	if json.Unmarshal(raw, &idss) == nil && len(idss) > 0 {
		return idss, nil
	}
	return nil, errors.New("input must be a non-empty string, list of strings, list of token ids or list of lists of token ids")
}

// pool runs a prefill-only sequence through the engine; false means the
// response was already written or the client left. Of the faults, only an
// HTTP status applies to pooling requests.
func (s *Server) pool(w http.ResponseWriter, r *http.Request, rid string, arrival time.Time, tokens []int) bool {
	f, err := s.requestFault(r, rid)
	if err != nil {
		writeErr(w, err)
		return false
	}
	if f.status != 0 {
		writeError(w, newError(f.status, "%s", faultMessage(f.status)))
		return false
	}
	if len(tokens) >= s.p.MaxModelLen {
		writeError(w, newError(http.StatusBadRequest, "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input.", s.p.MaxModelLen, len(tokens)))
		return false
	}
	sq := &seq{id: rid, prompt: tokens, promptLen: len(tokens), pooling: true, arrival: arrival, notify: make(chan struct{}, 1)}
	s.truth.add(&seqRecord{s: sq, endpoint: r.URL.Path, wall: arrival, received: receivedAt(r)})
	s.frontend(r)
	s.eng.submit(sq)
	for {
		_, finished, reason, ok := s.await(r, sq)
		if !ok || reason == "abort" {
			return false
		}
		if finished {
			sq.recordChunk(0)
			return true
		}
	}
}

// embedding is a deterministic unit vector of the tokens.
func embedding(tokens []int, dim int) []float32 {
	h := uint64(14695981039346656037)
	for _, t := range tokens {
		h = (h ^ uint64(t)) * 1099511628211
	}
	rng := rand.New(rand.NewPCG(h, 0xe3bed))
	v := make([]float32, dim)
	var n float64
	for i := range v {
		x := rng.NormFloat64()
		v[i] = float32(x)
		n += x * x
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return v
}

type rerankRequest struct {
	Model     string            `json:"model"`
	Query     string            `json:"query"`
	Documents []json.RawMessage `json:"documents"`
	TopN      int               `json:"top_n"`
}

type rerankResponse struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Usage   rerankUsage    `json:"usage"`
	Results []rerankResult `json:"results"`
}

type rerankUsage struct {
	TotalTokens int `json:"total_tokens"`
}

type rerankResult struct {
	Index          int               `json:"index"`
	Document       map[string]string `json:"document"`
	RelevanceScore float64           `json:"relevance_score"`
}

func (s *Server) handleRerank(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	var req rerankRequest
	if err := decodeBody(r, &req, maxPoolingBody); err != nil {
		writeErr(w, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		writeErr(w, err)
		return
	}
	if len(req.Documents) == 0 {
		writeError(w, newError(http.StatusBadRequest, "documents must not be empty"))
		return
	}
	docs := make([]string, len(req.Documents))
	for i, raw := range req.Documents {
		if json.Unmarshal(raw, &docs[i]) == nil {
			continue
		}
		var obj struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			writeError(w, newError(http.StatusBadRequest, "documents[%d] must be a string or {\"text\": ...}", i))
			return
		}
		docs[i] = obj.Text
	}
	// Every document is scored with the query before it: refuse what
	// cannot fit before tokenizing it.
	size := len(req.Query) * len(docs)
	for _, d := range docs {
		size += len(d)
	}
	if err := s.checkInputBytes(size); err != nil {
		writeErr(w, err)
		return
	}
	var all []int
	q := s.tk.Encode(req.Query, true)
	for _, d := range docs {
		all = append(all, q...)
		all = append(all, s.tk.Encode(d, false)...)
	}
	rid := s.requestID(r)
	if !s.pool(w, r, rid, arrival, all) {
		return
	}
	results := make([]rerankResult, len(docs))
	for i, d := range docs {
		results[i] = rerankResult{Index: i, Document: map[string]string{"text": d}, RelevanceScore: relevance(req.Query, d)}
	}
	sort.SliceStable(results, func(a, b int) bool { return results[a].RelevanceScore > results[b].RelevanceScore })
	if req.TopN > 0 && req.TopN < len(results) {
		results = results[:req.TopN]
	}
	writeJSON(w, http.StatusOK, rerankResponse{ID: "rerank-" + rid, Model: s.p.Model,
		Usage: rerankUsage{TotalTokens: len(all)}, Results: results})
}

// relevance is a deterministic score in [0, 1): word overlap plus a hash.
func relevance(query, doc string) float64 {
	qw := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(query)) {
		qw[w] = true
	}
	hit, n := 0, 0
	for _, w := range strings.Fields(strings.ToLower(doc)) {
		n++
		if qw[w] {
			hit++
		}
	}
	overlap := 0.0
	if n > 0 {
		overlap = float64(hit) / float64(n)
	}
	h := seedOf(0, query+"\x00"+doc)
	return 0.7*overlap + 0.3*float64(h>>11)/float64(1<<53)
}
