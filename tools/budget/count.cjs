// Token counts by the reference implementations: tiktoken's encode_ordinary for o200k_base
// and cl100k_base, and Claude's encoding from @anthropic-ai/tokenizer (NFKC first, as its
// countTokens does). Reads a JSON array of strings on stdin; prints [[claude, o200k, cl100k], …].
// Usage: TIKTOKEN=…/tiktoken/package CLAUDE=…/tokenizer/package node count.cjs < texts.json
const path = require("path");
const { Tiktoken } = require(path.join(process.env.TIKTOKEN, "lite/tiktoken.cjs"));
const load = (p) => { const j = require(p); return new Tiktoken(j.bpe_ranks, j.special_tokens, j.pat_str); };
const encodings = [
  load(path.join(process.env.CLAUDE, "claude.json")),
  load(path.join(process.env.TIKTOKEN, "encoders/o200k_base.json")),
  load(path.join(process.env.TIKTOKEN, "encoders/cl100k_base.json")),
];
const texts = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(texts.map((t) => [
  encodings[0].encode_ordinary(t.normalize("NFKC")).length,
  encodings[1].encode_ordinary(t).length,
  encodings[2].encode_ordinary(t).length,
])));
