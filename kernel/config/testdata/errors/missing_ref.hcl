model "openai" "local" {}
task "niah" "small" {}
retriever "bm25" "default" {}
eval "x" {
  task       = task.niah.smal
  models     = [model.openai.locl]
  retrievers = [null, retriever.bm25.dflt]
  scorers    = [scorer.rougel.zh]
}
eval "y" {
  task   = model.openai.local
  models = [modle.openai.local, model.openai, "openai"]
}
