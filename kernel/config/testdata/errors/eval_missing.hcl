model "openai" "local" {}
eval "no_task" {
  models = [model.openai.local]
}
eval "no_models" {
  task = task.niah.small
}
task "niah" "small" {}
eval "empty" {
  task       = task.niah.small
  models     = []
  retrievers = []
}
eval "not_a_list" {
  task   = task.niah.small
  models = model.openai.local
  limit  = -5
}
