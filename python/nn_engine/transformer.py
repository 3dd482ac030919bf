"""torch.nn.TransformerEncoderLayer and TransformerEncoder with their module
trees and state_dict names (self_attn, linear1, linear2, norm1, norm2;
layers.<i>, norm), so torch's weights load and its scripts run: post-norm
by default, pre-norm with norm_first, ReLU or GELU feed-forward, batch_first
or not, an additive or boolean src_mask or is_causal. The attention is
MultiheadAttention's fused one. No dropout: the attention's would be
needed too, which the fused kernels do not draw (pass dropout=0.0); no
src_key_padding_mask (pass a mask)."""
from . import functional as F
from .containers import ModuleList
from .layers import Dropout, LayerNorm, Linear, MultiheadAttention
from .module import Module

__all__ = ["TransformerEncoderLayer", "TransformerEncoder"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(Module):
    """torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward,
    dropout=0.0, activation, layer_norm_eps, batch_first, norm_first, bias)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        if float(dropout) != 0.0:
            raise ValueError(f"TransformerEncoderLayer: dropout={dropout!r} is not supported (the attention's "
                             f"dropout is not drawn by the fused kernels); pass dropout=0.0")
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(f"TransformerEncoderLayer: activation must be 'relu', 'gelu' or a callable, got "
                                 f"{activation!r}")
            activation = _ACTIVATIONS[activation]
        elif not callable(activation):
            raise ValueError(f"TransformerEncoderLayer: activation must be 'relu', 'gelu' or a callable, got "
                             f"{activation!r}")
        self._config = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward, dropout=0.0,
                            activation=activation, layer_norm_eps=layer_norm_eps, batch_first=batch_first,
                            norm_first=norm_first, bias=bias)
        self.self_attn = MultiheadAttention(d_model, nhead, bias=bias, batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(0.0)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(0.0)
        self.dropout2 = Dropout(0.0)
        self.activation = activation

    def _attention(self, x, mask, is_causal):
        return self.dropout1(self.self_attn(x, x, x, attn_mask=mask, need_weights=False,
                                            is_causal=is_causal)[0])

    def _feed_forward(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        if src_key_padding_mask is not None:
            raise ValueError("TransformerEncoderLayer: src_key_padding_mask is not supported (pass a src_mask)")
        x = src
        if self.norm_first:
            x = F.add(x, self._attention(self.norm1(x), src_mask, is_causal))
            return F.add(x, self._feed_forward(self.norm2(x)))
        x = self.norm1(F.add(x, self._attention(x, src_mask, is_causal)))
        return self.norm2(F.add(x, self._feed_forward(x)))


class TransformerEncoder(Module):
    """torch.nn.TransformerEncoder(encoder_layer, num_layers, norm): layers
    0 .. num_layers - 1 start as copies of encoder_layer (torch deep-copies
    it: every layer the same initial weights), then the optional norm."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        if not isinstance(encoder_layer, TransformerEncoderLayer):
            raise TypeError(f"TransformerEncoder: encoder_layer must be a TransformerEncoderLayer, got "
                            f"{type(encoder_layer).__name__}")
        if not isinstance(num_layers, int) or isinstance(num_layers, bool) or num_layers < 1:
            raise ValueError(f"TransformerEncoder: num_layers must be an int >= 1, got {num_layers!r}")
        state = encoder_layer.state_dict()
        layers = []
        for _ in range(num_layers):
            layer = TransformerEncoderLayer(**encoder_layer._config)
            layer.load_state_dict(state)
            layers.append(layer)
        self.layers = ModuleList(layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x
