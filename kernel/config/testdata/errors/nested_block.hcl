model "openai" "local" {
  retry {
    max = 3
  }
}
eval "x" {
  task = task.a.b
  models = [model.openai.local]
  matrix {}
}
task "a" "b" {}
