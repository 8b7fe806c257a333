# RAG ablation (the XLBench setting): the same tasks and models, with the full
# context (null) and with three retrievers that send only the top 5 chunks of
# 500 cl100k tokens most related to the question. The report puts each
# retriever's row beside the full-context row, with its delta.
#
#   hayloft run examples/rag-ablation.hcl --eval needle_rag_offline  # no server needed
#   hayloft run examples/rag-ablation.hcl                              # everything
#
# The offline eval uses the extractive baseline with the built-in hashing
# embedder and BM25, on Go's public-domain copy of Opticks. The full evals
# also ask a local OpenAI-compatible chat server (vLLM, llama.cpp, …) on
# 127.0.0.1:8000, and embed with an OpenAI-compatible embeddings server on
# 127.0.0.1:8080 — e.g. a Sentence-Transformers, LLM-Embedder or Contriever
# model behind vLLM (`vllm serve BAAI/bge-base-en-v1.5 --task embed --port 8080`),
# llama.cpp (`llama-server --embeddings`) or TEI.
#
# Embeddings from the server are cached in the journal by (embedder, model,
# chunk text), so rerunning the ablation, or adding a model to it, embeds
# nothing again. NIAH and Counting-Stars contexts share most of their
# chunks across depths and lengths, so even the first run embeds each
# distinct chunk once.

task "niah" "opticks" {
  haystack = env_or("HAYSTACK", "${goroot()}/src/testdata/Isaac.Newton-Opticks.txt")
  # 5 lengths × 5 depths = 25 samples; RAG matters most at the long end.
  lengths = [4000, 8000, 16000, 32000, 64000]
  depths  = [0, 25, 50, 75, 100]
}

task "countingstars" "en_acquisition" {
  language = "en"
  mode     = "acquisition"
  haystack = env_or("HAYSTACK", "${goroot()}/src/testdata/Isaac.Newton-Opticks.txt")
  needles  = 32
  lengths  = range(8000, 64001, 8000)
}

# The full-context control is `null` in an eval's retrievers list.

# Dense retrieval, offline: feature-hashed word uni/bigrams and character
# trigrams, TF-IDF weighted over the document's chunks.
retriever "cosine" "hashing" {
  embedder      = "hashing"
  chunk_tokens  = 500
  chunk_overlap = 0
  top_k         = 5
}

# Lexical retrieval over the same chunks (k1 = 1.2, b = 0.75).
retriever "bm25" "default" {}

# Dense retrieval with a real embedding model.
retriever "cosine" "local" {
  embedder        = env_or("EMBEDDER", "openai:http://127.0.0.1:8080/v1")
  embedding_model = env_or("EMBEDDING_MODEL", "BAAI/bge-base-en-v1.5")
  chunk_tokens    = 500
  top_k           = 5
  batch_size      = 64
}

model "baseline" "extractive" {}

model "openai" "local" {
  base_url        = env_or("BASE_URL", "http://127.0.0.1:8000/v1")
  model           = env_or("MODEL", "meta-llama/Llama-3.1-8B-Instruct")
  # api_key_env     = "OPENAI_API_KEY" # hosted APIs only: the name of the variable holding the key
  context_window  = 131072
  max_tokens      = 512
  temperature     = 0
  max_concurrency = 16
}

eval "needle_rag_offline" {
  task       = task.niah.opticks
  models     = [model.baseline.extractive]
  retrievers = [null, retriever.cosine.hashing, retriever.bm25.default]
  scorers    = ["niah", "contains"]
}

eval "needle_rag" {
  task       = task.niah.opticks
  models     = [model.baseline.extractive, model.openai.local]
  retrievers = [null, retriever.cosine.hashing, retriever.bm25.default, retriever.cosine.local]
  scorers    = ["niah", "contains"]
}

eval "stars_rag" {
  task       = task.countingstars.en_acquisition
  models     = [model.baseline.extractive, model.openai.local]
  retrievers = [null, retriever.cosine.hashing, retriever.bm25.default, retriever.cosine.local]
  scorers    = ["countingstars"]
}
