package conversation

import "github.com/servegate/servegate/internal/dataset"

// Limits on what a Source may ask for. They sit far above any real
// benchmark and keep a typing slip or a hostile file from exhausting
// memory: Load stops with an error naming the key, file or line before it
// holds more.
const (
	// MaxConversations is the most conversations a source may give:
	// num_conversations, the entries of a conversations or ShareGPT file,
	// the lines of a trace.
	MaxConversations = 1_000_000
	// MaxMessages is the most messages of one conversation; for synthetic
	// conversations, the largest num_turns draw (num_turns counts user and
	// assistant messages, as in vLLM).
	MaxMessages = 100_000
	// MaxTokens is the most tokens of one draw (input, prefix, common
	// prefix and output tokens) and of a trace line's input or output
	// length: dataset.MaxLen.
	MaxTokens = dataset.MaxLen
	// MaxTotalTokens is the most user-message tokens all conversations of
	// a source may hold together (about 640 MB of text): the same bound as
	// a generated dataset's, dataset.MaxTotalTokens.
	MaxTotalTokens = dataset.MaxTotalTokens
	// MaxFileBytes is the largest conversations, ShareGPT or text file,
	// and the most the text files of a synthetic source hold together;
	// a trace is streamed line by line and has no size limit of its own.
	MaxFileBytes = 1 << 30
	// MaxLineBytes is the longest line of a trace.
	MaxLineBytes = 16 << 20
	// MaxBlockSize is the largest block_size of a trace, in tokens.
	MaxBlockSize = 1 << 16
	// MaxTextFiles is the most text_files of a synthetic source.
	MaxTextFiles = 1000
	// MaxContentLen is the largest min_content_len or max_content_len of
	// a ShareGPT source, in characters.
	MaxContentLen = 1 << 30
	// MaxIDBytes is the longest id of a conversation or ShareGPT entry.
	// The id goes into every request's x-request-id header, and servers
	// refuse long headers: Go's at 1 MiB, vLLM's h11 at 16 KiB.
	MaxIDBytes = 256
)

// fileLimit, lineLimit and totalLimit are MaxFileBytes, MaxLineBytes and
// MaxTotalTokens as the code reads them, so that tests can lower them.
var (
	fileLimit  int64 = MaxFileBytes
	lineLimit        = MaxLineBytes
	totalLimit       = MaxTotalTokens
)
