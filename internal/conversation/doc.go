// Package conversation produces the scripts of multi-turn sessions: the
// user turns of each conversation, from one of four sources (a Source's
// Kind, the closed list Kinds):
//
//   - synthetic: generated with the knobs of vLLM's benchmarks/multi_turn
//     generator, spelled as in its generate_multi_turn.json (such a file
//     loads as it is, with ReadGenerateConfig or a source's path), each
//     count drawn from a Distribution (constant, uniform, zipf, poisson,
//     lognormal; the closed list Distributions);
//   - file: a conversations file in vLLM's multi-turn input format, a JSON
//     list of {"id", "messages": [{"role", "content"}]};
//   - sharegpt: a ShareGPT file read through the conversion vLLM's
//     convert_sharegpt_to_openai.py makes (the same conversations in the
//     same order for the same seed and options);
//   - mooncake: a Mooncake-style trace (the FAST'25 release's JSON lines),
//     one single-turn conversation per line at its timestamp, equal hash
//     ids sending equal blocks of tokens.
//
// A Conversation holds only what the client sends of its own; the
// assistant's answers come from the server at run time (the session
// driver appends them to the history, as vLLM's client does).
//
// Token counts are the real tokenizer's, without special tokens, as vLLM's
// multi-turn client counts them: Turn.UserTokens is always the count of
// Turn.User, and the synthetic and trace sources make that count exactly
// the drawn or recorded length (see Synthetic and the mooncake kind).
//
// # Differences from vLLM
//
//   - Draws are deterministic for a seed (a PCG seeded through splitmix64,
//     NewRand) but are not numpy's: the same configuration gives the same
//     distributions as vLLM, not the same numbers. The ShareGPT conversion
//     does reproduce Python's random, so it picks vLLM's conversations.
//   - A synthetic source's text wraps around its end where vLLM stops with
//     "Not enough input text"; with no text_files it is a short bundled
//     text (vLLM requires text_files).
//   - uniform accepts min 0 (vLLM asserts min > 0); prefix_num_tokens may
//     be left out (vLLM requires it); a distribution parameter the
//     distribution does not take is an error (vLLM ignores it); draws are
//     clamped to the key's limit (MaxTokens, MaxMessages).
//   - A conversations file may start with a system message
//     (Conversation.System), which vLLM's client rejects.
//   - A ShareGPT id without "_" is its own conversation; vLLM's script
//     fails on it.
//
// # Bad input
//
// Validate reports a bad key as a *FieldError naming the key's path below
// the source. A bad file is one *dataset.FileError naming the file, the
// line and the field (a JSON syntax error, a conversation whose roles do
// not alternate, a trace whose timestamps go backwards or whose hash ids
// cannot cover its input length, ...), and Load returns no conversation
// with it. Files are streamed, never held whole, and every size has a
// documented limit (MaxFileBytes, MaxLineBytes, MaxConversations,
// MaxMessages, MaxTokens, MaxTotalTokens, ...). A long message is counted
// in pieces of dataset.PieceBytes (dataset.CountText), so its tokenizer's
// memory does not grow with its length.
package conversation
