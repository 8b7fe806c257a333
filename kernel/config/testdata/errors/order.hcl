task "niah" "t" {}
model "baseline" "b" {}
eval "e" {
  task   = task.niah.t
  models = [model.baseline.b]
  order  = "prefx"
}
eval "f" {
  task   = task.niah.t
  models = [model.baseline.b]
  order  = 1
}
