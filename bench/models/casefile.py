"""DIR/case.txt: one case of the model bench as every worker reads it (bench/model_worker.cpp
reads the same lines), and the outputs a worker leaves next to it.

    workload gpt            the key of workloads.WORKLOADS
    mode fwdbwd             fwd (inference) | fwdbwd (forward + backward)
    param H 8               a shape parameter (integers), one line each
    graph graph.txt         the make_fx printout (Stax)
    input x_1 in_0.npy      one per argument, in order: the printout's placeholder name, its file
    wrt 0,1,2               the arguments the backward differentiates (fwdbwd)
    cotangent cot_0.npy     one per forward output: its upstream gradient, or `none`
    hand W1                 the hand-written kernel (bench/hand_kernels.h), or `none`

Each worker's `setup` writes the case's outputs to DIR/out_SYSTEM_K.npy: the forward outputs in
order, then (fwdbwd) one gradient per wrt argument.
"""
import os
from dataclasses import dataclass, field

import numpy as np


@dataclass
class CaseFile:
    dir: str
    workload: str = ""
    mode: str = "fwd"
    params: dict = field(default_factory=dict)
    graph: str = ""
    inputs: list = field(default_factory=list)  # [(name, file)]
    wrt: list = field(default_factory=list)
    cotangents: list = field(default_factory=list)  # file or None
    hand: str = "none"

    def path(self, file):
        return os.path.join(self.dir, file)

    def load_inputs(self):
        return [np.load(self.path(f)) for _, f in self.inputs]

    def load_cotangents(self):
        return [None if f is None else np.load(self.path(f)) for f in self.cotangents]

    def write(self):
        lines = ["workload " + self.workload, "mode " + self.mode]
        lines += ["param %s %d" % kv for kv in sorted(self.params.items())]
        if self.graph:
            lines.append("graph " + self.graph)
        lines += ["input %s %s" % nf for nf in self.inputs]
        if self.wrt:
            lines.append("wrt " + ",".join(str(i) for i in self.wrt))
        lines += ["cotangent " + (f or "none") for f in self.cotangents]
        lines.append("hand " + (self.hand or "none"))
        with open(self.path("case.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


def read(dir):
    c = CaseFile(dir)
    with open(os.path.join(dir, "case.txt")) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            key, rest = parts[0], parts[1:]
            if key == "workload":
                c.workload = rest[0]
            elif key == "mode":
                c.mode = rest[0]
            elif key == "param":
                c.params[rest[0]] = int(rest[1])
            elif key == "graph":
                c.graph = rest[0]
            elif key == "input":
                c.inputs.append((rest[0], rest[1]))
            elif key == "wrt":
                c.wrt = [int(i) for i in rest[0].split(",") if i]
            elif key == "cotangent":
                c.cotangents.append(None if rest[0] == "none" else rest[0])
            elif key == "hand":
                c.hand = rest[0]
    return c


def output_path(dir, system, k):
    return os.path.join(dir, "out_%s_%d.npy" % (system, k))


def load_outputs(dir, system):
    out, k = [], 0
    while os.path.exists(output_path(dir, system, k)):
        out.append(np.load(output_path(dir, system, k)))
        k += 1
    return out
