"""The paper's cross-layer sharing strategies (Table 4) as one table.

The config's validation, the layer builder, the parameter count and the HF export all read this table, so a new
strategy is one new row here.
"""

from __future__ import annotations

from dataclasses import dataclass

# The AlbertLayer attributes that make up each block; a strategy that shares a block ties all of them.
BLOCK_MODULES = {
    "attention": ("attention",),
    "ffn": ("ffn", "ffn_output", "full_layer_layer_norm"),  # the two matrices and the LayerNorm closing the block
}


@dataclass(frozen=True)
class SharingStrategy:
    """Which parameters the L layer applications share, and the layer groups (G, K) that implies."""

    name: str
    description: str
    # Blocks that one module serves for every layer while the rest stays per layer. Empty: whole layers are
    # shared through the config's G groups of K layers.
    tied_blocks: tuple[str, ...] = ()
    one_group_per_layer: bool = False  # every layer has weights of its own: G = L and K = 1

    @property
    def whole_layers(self) -> bool:
        """True when layers are shared whole, by groups: the only kind HF's AlbertConfig can express."""
        return not self.tied_blocks

    @property
    def tied_modules(self) -> tuple[str, ...]:
        """AlbertLayer attributes that every layer takes from the first layer."""
        return tuple(module for block in self.tied_blocks for module in BLOCK_MODULES[block])

    def required_groups(self, num_layers: int) -> tuple[int, int] | None:
        """The (G, K) this strategy needs for L layers, or None when any G that divides L will do."""
        if self.one_group_per_layer:
            return num_layers, 1
        if self.tied_blocks:
            return 1, 1  # one module per layer, built by the strategy itself
        return None

    def default_groups(self, num_layers: int) -> tuple[int, int]:
        """The (G, K) a model of L layers gets with this strategy; ALBERT's one group for 'all'."""
        return self.required_groups(num_layers) or (1, 1)

    def num_layer_modules(self, num_layers: int, num_groups: int) -> int:
        """Layer-group modules the encoder holds: G, or one per layer when only some blocks are tied."""
        return num_groups if self.whole_layers else num_layers

    def distinct_blocks(self, num_layers: int, num_groups: int, inner_group_num: int) -> tuple[int, int]:
        """How many distinct (attention, FFN) blocks hold parameters."""
        if self.whole_layers:
            return num_groups * inner_group_num, num_groups * inner_group_num
        return tuple(1 if block in self.tied_blocks else num_layers for block in BLOCK_MODULES)


STRATEGIES: dict[str, SharingStrategy] = {
    strategy.name: strategy for strategy in (
        SharingStrategy("all", "whole layers shared: G groups of K layers serve all L layers (ALBERT)"),
        SharingStrategy("attention", "one attention block for all layers, an FFN per layer",
                        tied_blocks=("attention",)),
        SharingStrategy("ffn", "one FFN block for all layers, an attention per layer", tied_blocks=("ffn",)),
        SharingStrategy("none", "every layer has its own weights (BERT)", one_group_per_layer=True),
    )
}


def whole_layer_sharing(num_layers: int, num_groups: int, inner_group_num: int) -> str:
    """The whole-layer strategy a (L, G, K) layout describes, e.g. for an HF config: 'none' when it needs it."""
    for strategy in STRATEGIES.values():
        if strategy.one_group_per_layer and strategy.required_groups(num_layers) == (num_groups, inner_group_num):
            return strategy.name
    return "all"
