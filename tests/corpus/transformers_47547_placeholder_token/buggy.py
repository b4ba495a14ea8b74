"""Reproduction of huggingface/transformers#47547 ("Fix CUDA Graph breaking host to device copy from scalar
tensor allocation"), written for graphcheck's corpus.

models/*/modeling_*.py of the vision-language models: when only ``inputs_embeds`` are given, the
placeholder mask compared the embeddings with the embedding of the image token, built per call with
``torch.tensor(self.config.image_token_id, ..., device=inputs_embeds.device)``: a pageable host-to-device
copy, which aborts CUDA-graph capture of the forward. The fix fills the scalar on the device with
``torch.full((), ...)``.
"""

import torch
from torch import nn
from transformers.modeling_utils import PreTrainedModel


class TinyVlmPreTrainedModel(PreTrainedModel):
    base_model_prefix = "model"
    supports_gradient_checkpointing = True


class TinyVlmModel(TinyVlmPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.vision_tower = nn.Linear(config.vision_dim, config.hidden_size)
        self.language_model = nn.Embedding(config.vocab_size, config.hidden_size)

    def get_input_embeddings(self):
        return self.language_model

    def get_placeholder_mask(self, input_ids, inputs_embeds, image_features):
        if input_ids is None:
            image_embed = self.get_input_embeddings()(
                torch.tensor(self.config.image_token_id, dtype=torch.long, device=inputs_embeds.device)  # graphcheck: expect[GC301]
            )
            special_image_mask = (inputs_embeds == image_embed).all(-1)
        else:
            special_image_mask = input_ids == self.config.image_token_id
        return special_image_mask.unsqueeze(-1).expand_as(inputs_embeds)

    def forward(self, input_ids=None, pixel_values=None, inputs_embeds=None):
        if inputs_embeds is None:
            inputs_embeds = self.get_input_embeddings()(input_ids)
        if pixel_values is not None:
            image_features = self.vision_tower(pixel_values).to(inputs_embeds.dtype)
            mask = self.get_placeholder_mask(input_ids, inputs_embeds, image_features)
            inputs_embeds = inputs_embeds.masked_scatter(mask, image_features)
        return inputs_embeds
