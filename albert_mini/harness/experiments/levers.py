"""Stage A's levers against SOP's plateau: what a branch changes besides Table 5 v3's SOP row.

On the plateau the sentence head's outputs are nearly constant and LAMB moves every tensor by lr x its own norm, so
a head that the loss has shrunk toward zero also takes ever smaller steps (docs: /work/shared/design/sop-v4.md). Two
levers attack that from two sides:

- **A1** (`adam_sentence_path`): the pooler and the sentence head leave LAMB's trust ratio and weight decay. They
  go to a parameter group of their own with `adapt=False` and no weight decay, so each of their tensors moves by
  the learning rate times m / (sqrt(v) + eps): the same Adam step LAMB already gives LayerNorm and bias tensors
  (the reference's moments, without bias correction), at the schedule's learning rate. Everything else is the
  v3 SOP branch.
- **A2** (`nsp_first`): the fresh head first learns NSP, whose topic cue is easy, for 500 steps, then SOP on the same
  head for the rest of the branch. NSP's "B continues A" and SOP's "in order" share label 0. The NSP batches are
  the v3 NSP row's of the same seed; from the switch on, the SOP batches are the v3 SOP row's from that step on,
  so after the switch A2 sees exactly the data the control row saw.

A lever is a named branch setting: it enters the run key of the runs that use it (`Lever.settings`, under the spec's
"lever" entry) and nothing else's, so every finished run of Table 5 keeps its key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...text.batch_source import PhasedBatches
from ...training.run_data import training_batches
from .trunk import BRANCH_DATA_SEED, TrunkPlan

SENTENCE_PATH = ("albert.pooler.", "sop_classifier.")  # the parameters only the sentence loss trains


@dataclass(frozen=True)
class Lever:
    """A change to the v3 SOP branch, by name: A1 sets `adam_sentence_path`, A2 sets `nsp_first`."""

    name: str
    adam_sentence_path: bool = False  # A1: pooler and head in a group without trust ratio and weight decay
    nsp_first: int = 0  # A2: steps of NSP with the fresh head before SOP on the same head

    def settings(self) -> dict:
        """What the run key records of the lever."""
        return dataclasses.asdict(self)

    def batches(self, trunk: TrunkPlan, seed: int, documents, tokenizer, phases):
        """The branch's training batches: the v3 SOP row's, or with `nsp_first` the NSP row's first."""
        sop = training_batches(trunk.setup("sop", BRANCH_DATA_SEED + seed), documents, tokenizer,
                                     phases=phases)
        if not self.nsp_first:
            return sop
        nsp = training_batches(trunk.setup("nsp", BRANCH_DATA_SEED + seed), documents, tokenizer,
                                     phases=phases)
        return nsp_then_sop(nsp, sop, self.nsp_first)

    def prepare(self, model, optimizer) -> None:
        """Applied once after the fresh head is drawn and the trunk's optimizer state is loaded."""
        if self.adam_sentence_path:
            adam_sentence_path(model, optimizer)


A1 = Lever("A1", adam_sentence_path=True)
A2 = Lever("A2", nsp_first=500)


def nsp_then_sop(nsp, sop, switch: int) -> PhasedBatches:
    """NSP's first `switch` batches, then SOP's from its batch `switch` on (SOP's first `switch` are drawn and
    dropped, so that its phases end where the branch's do). The position is saved with a checkpoint as any
    PhasedBatches' is, so a resumed run continues at the right batch of the right stream."""
    for _ in range(switch):
        next(sop)
    return PhasedBatches(nsp, sop, switch_after=switch)


def adam_sentence_path(model, optimizer) -> list[str]:
    """Move the pooler and the sentence head into a parameter group of their own, without LAMB's trust ratio
    (`adapt=False`) and without weight decay; returns their names. Their optimizer moments stay as they are
    (the state is kept per tensor), and the schedule sets this group's learning rate as every other's."""
    moved = [(name, p) for name, p in model.named_parameters() if name.startswith(SENTENCE_PATH) and p.requires_grad]
    ids = {id(p) for _, p in moved}
    if not ids:
        raise ValueError("the model has no trainable pooler or sentence head to move")
    for group in optimizer.param_groups:
        keep = [i for i, p in enumerate(group["params"]) if id(p) not in ids]
        if "param_names" in group:  # torch keeps the names of named parameters beside them
            group["param_names"] = [group["param_names"][i] for i in keep]
        group["params"] = [group["params"][i] for i in keep]
    named = "param_names" in optimizer.param_groups[0]  # torch wants every group named or none
    optimizer.add_param_group({"params": moved if named else [p for _, p in moved], "weight_decay": 0.0,
                               "adapt": False})
    return [name for name, _ in moved]
