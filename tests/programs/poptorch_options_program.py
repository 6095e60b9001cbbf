"""A PopTorch program's options, as a Graphcore tutorial sets them up (run by test_poptorch_options
through `ipu-gpu run`: `import poptorch` must reach ipu_gpu.poptorch)."""

import poptorch

opts = poptorch.Options()
opts.deviceIterations(4).replicationFactor(2)
opts.Training.gradientAccumulation(3)
opts.outputMode(poptorch.OutputMode.All)
config = opts.toDict()
print(f"device_iterations={config['device_iterations']} "
      f"replication_factor={config['replication_factor']} "
      f"gradient_accumulation={config['gradient_accumulation']} "
      f"output_mode={poptorch.OutputMode(config['output_mode']).name} "
      f"module={type(opts).__module__}")
