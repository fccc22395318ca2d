package dataset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChatTemplateRealModels renders the chat templates shipped in real
// tokenizer_config.json files. The expected strings were produced by
// Python's jinja2 3.1.6 with transformers' settings (trim_blocks,
// lstrip_blocks) on the same templates and messages.
func TestChatTemplateRealModels(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "  Héllo wörld 你好  "}}
	tests := []struct {
		dir  string
		gen  bool
		want string
	}{
		{"meta-llama-3-8b-instruct", true, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHéllo wörld 你好<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"meta-llama-3-8b-instruct", false, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHéllo wörld 你好<|eot_id|>"},
		{"kimi-k2-instruct", true, "<|im_system|>system<|im_middle|>You are a helpful assistant<|im_end|><|im_user|>user<|im_middle|>  Héllo wörld 你好  <|im_end|><|im_assistant|>assistant<|im_middle|>"},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			cfg := readShippedConfig(t, tt.dir)
			got, err := cfg.ApplyChatTemplate(msgs, tt.gen)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	llama := readShippedConfig(t, "meta-llama-3-8b-instruct")
	assert.True(t, llama.CleanUpTokenizationSpaces)
	assert.Equal(t, "<|eot_id|>", llama.EOSToken)
	kimi := readShippedConfig(t, "kimi-k2-instruct")
	assert.False(t, kimi.CleanUpTokenizationSpaces)
	assert.Equal(t, "[BOS]", kimi.BOSToken)
}

func TestReadTokenizerConfigForms(t *testing.T) {
	path := writeTemp(t, "tokenizer_config.json", `{
  "bos_token": {"content": "<s>", "lstrip": false},
  "eos_token": "</s>",
  "chat_template": [
    {"name": "tool_use", "template": "tools"},
    {"name": "default", "template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}"}
  ]
}`)
	cfg, err := ReadTokenizerConfig(path)
	require.NoError(t, err)
	got, err := cfg.ApplyChatTemplate([]Message{{"system", "be brief"}, {"user", "hi"}}, true)
	require.NoError(t, err)
	assert.Equal(t, "<s>[system] be brief</s>[user] hi</s>", got)

	_, err = ReadTokenizerConfig(writeTemp(t, "bad.json", `{"chat_template": 3}`))
	assert.ErrorContains(t, err, "chat_template: neither a string nor a list of named templates")

	broken := &TokenizerConfig{ChatTemplate: "{% for m in messages %}"}
	_, err = broken.ApplyChatTemplate(nil, true)
	assert.ErrorContains(t, err, "apply chat template: compile: ")
}

func TestCleanUpTokenization(t *testing.T) {
	assert.Equal(t, "Hello, world. Isn't it? I'm here!", cleanUpTokenization("Hello , world . Is n't it ? I 'm here !"))
}
