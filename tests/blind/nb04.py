"""Blind answers for notebook 04, written from notebooks/04_nn_module.ipynb only."""
from tests.blind import Answer

ANSWERS = [
    # ------------------------------------------------------------------ 04.make_mlp
    Answer("04.make_mlp", "ok", '''
        def make_mlp(sizes):
            layers = []
            for i in range(len(sizes) - 1):
                layers.append(nn.Linear(sizes[i], sizes[i + 1]))
                if i < len(sizes) - 2:
                    layers.append(nn.ReLU())
            return nn.Sequential(*layers)
    ''', label="Sequential from a list, ReLU except after the last"),
    Answer("04.make_mlp", "ok", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.Linear(a, b), nn.ReLU()]
            return nn.Sequential(*layers[:-1])
    ''', label="zip pairs, drop the trailing ReLU"),
    Answer("04.make_mlp", "ok", '''
        def make_mlp(sizes):
            class MLP(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
                    self.act = nn.ReLU()

                def forward(self, x):
                    for i, layer in enumerate(self.layers):
                        if i > 0:
                            x = self.act(x)
                        x = layer(x)
                    return x
            return MLP()
    ''', label="custom Module with ModuleList"),
    Answer("04.make_mlp", "ok", '''
        def make_mlp(sizes: list[int]) -> nn.Module:
            """Linear -> ReLU -> ... -> Linear, with named layers."""
            from collections import OrderedDict
            parts = OrderedDict()
            for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
                if i:
                    parts[f"relu{i}"] = nn.ReLU()
                parts[f"fc{i}"] = nn.Linear(a, b)
            return nn.Sequential(parts)
    ''', label="Sequential(OrderedDict) with names"),
    Answer("04.make_mlp", "ok", '''
        def make_mlp(sizes):
            model = nn.Sequential()
            for i in range(len(sizes) - 1):
                if i > 0:
                    model.append(nn.ReLU())
                model.append(nn.Linear(sizes[i], sizes[i + 1]))
            return model
    ''', label="Sequential.append"),
    Answer("04.make_mlp", "ok", '''
        def make_mlp(sizes):
            class MLP(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.n = len(sizes) - 1
                    for i in range(self.n):
                        setattr(self, f"fc{i}", nn.Linear(sizes[i], sizes[i + 1]))
                        if i < self.n - 1:
                            self.add_module(f"act{i}", nn.ReLU())

                def forward(self, x):
                    for i in range(self.n):
                        x = getattr(self, f"fc{i}")(x)
                        if i < self.n - 1:
                            x = getattr(self, f"act{i}")(x)
                    return x
            return MLP()
    ''', label="setattr/add_module in a loop"),
    Answer("04.make_mlp", "ok", '''
        def make_mlp(sizes):
            import itertools
            linears = [nn.Linear(a, b) for a, b in itertools.pairwise(sizes)]
            mods = [m for lin in linears for m in (lin, nn.ReLU())][:-1]
            return nn.Sequential(*mods)
    ''', label="itertools.pairwise, flattened comprehension"),

    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.Linear(a, b), nn.ReLU()]
            return nn.Sequential(*layers)
    ''', label="ReLU after the last layer too", words=("last",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            class MLP(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]

                def forward(self, x):
                    for i, layer in enumerate(self.layers):
                        x = layer(torch.relu(x) if i > 0 else x)
                    return x
            return MLP()
    ''', label="plain Python list (layers not registered)", words=("ModuleList",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            return nn.Sequential(*[nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])])
    ''', label="no ReLUs", words=("ReLU",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for i in range(len(sizes) - 1):
                layers.append(nn.Linear(sizes[i], sizes[i]))
                if i < len(sizes) - 2:
                    layers.append(nn.ReLU())
            return nn.Sequential(*layers)
    ''', label="Linear(sizes[i], sizes[i])", words=("sizes",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for i in range(len(sizes) - 2):
                layers.append(nn.Linear(sizes[i], sizes[i + 1]))
                layers.append(nn.ReLU())
            return nn.Sequential(*layers[:-1])
    ''', label="off by one: last Linear missing", words=("Linear",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.Linear(a, b), nn.Sigmoid()]
            return nn.Sequential(*layers[:-1])
    ''', label="Sigmoid instead of ReLU", words=("ReLU",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            class MLP(nn.Module):
                def forward(self, x):
                    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
                        if i:
                            x = torch.relu(x)
                        x = nn.Linear(a, b)(x)
                    return x
            return MLP()
    ''', label="layers created in forward", words=('registered',)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.Linear(a, b), nn.ReLU()]
            return layers[:-1]
    ''', label="returns a list, not a module", words=("Module",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            class MLP(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = {f"fc{i}": nn.Linear(a, b) for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))}

                def forward(self, x):
                    for i, layer in enumerate(self.layers.values()):
                        x = layer(torch.relu(x) if i else x)
                    return x
            return MLP()
    ''', label="plain dict of layers (not registered)", words=('registered',)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.ReLU(), nn.Linear(a, b)]
            return nn.Sequential(*layers)
    ''', label="ReLU before the first Linear", words=("ReLU",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            return nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[2]))
    ''', label="hard-codes three sizes (only the example)", words=("sizes",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.Linear(a, b, bias=False), nn.ReLU()]
            return nn.Sequential(*layers[:-1])
    ''', label="Linear without bias", words=("bias",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.Linear(a, b), nn.ReLU(), nn.Dropout(0.1)]
            return nn.Sequential(*layers[:-2])
    ''', label="adds Dropout between layers", words=('wrong values',)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.Linear(a, b), nn.ReLU]
            return nn.Sequential(*layers[:-1])
    ''', label="nn.ReLU class, not an instance", words=('ReLU()',)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.LazyLinear(b), nn.ReLU()]
            return nn.Sequential(*layers[:-1])
    ''', label="LazyLinear (no in_features until the first call)", words=("Linear",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.Linear(b, a), nn.ReLU()]
            return nn.Sequential(*layers[:-1])
    ''', label="Linear(out, in) swapped", words=("sizes",)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            class MLP(nn.Module):
                def __init__(self):
                    self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

                def forward(self, x):
                    for i, layer in enumerate(self.layers):
                        x = layer(torch.relu(x) if i else x)
                    return x
            return MLP()
    ''', label="forgets super().__init__()", words=('Module.__init__()',)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.Linear(a, b), nn.ReLU()]
            return nn.Sequential(*layers[:-1], nn.Softmax(dim=-1))
    ''', label="Softmax at the end", words=('wrong values',)),
    Answer("04.make_mlp", "fail", '''
        def make_mlp(sizes):
            layers = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                layers += [nn.Linear(a, b), nn.LeakyReLU()]
            return nn.Sequential(*layers[:-1])
    ''', label="LeakyReLU instead of ReLU", words=("ReLU",)),

    # ------------------------------------------------------------------ 04.count_trainable
    Answer("04.count_trainable", "ok", '''
        def count_trainable(model):
            return sum(p.numel() for p in model.parameters() if p.requires_grad)
    ''', label="sum of numel over parameters()"),
    Answer("04.count_trainable", "ok", '''
        def count_trainable(model):
            seen = set()
            total = 0
            for _, p in model.named_parameters(remove_duplicate=False):
                if p.requires_grad and id(p) not in seen:
                    seen.add(id(p))
                    total += p.numel()
            return total
    ''', label="dedup by id over remove_duplicate=False"),
    Answer("04.count_trainable", "ok", '''
        def count_trainable(model: nn.Module) -> int:
            """Scalars an optimizer could update; tied weights once."""
            total = 0
            for p in model.parameters():
                if p.requires_grad:
                    total += p.nelement()
            return int(total)
    ''', label="loop with nelement"),
    Answer("04.count_trainable", "ok", '''
        def count_trainable(model):
            return sum(map(lambda p: p.numel() * p.requires_grad, model.parameters()))
    ''', label="map with bool multiply"),
    Answer("04.count_trainable", "ok", '''
        def count_trainable(model):
            trainable = [p for p in model.parameters() if p.requires_grad]
            if not trainable:
                return 0
            return torch.nn.utils.parameters_to_vector(trainable).numel()
    ''', label="parameters_to_vector"),
    Answer("04.count_trainable", "ok", '''
        def count_trainable(model):
            seen = {}
            for m in model.modules():
                for p in m.parameters(recurse=False):
                    seen[id(p)] = p
            return sum(p.numel() for p in seen.values() if p.requires_grad)
    ''', label="walk modules, recurse=False, dict keyed by id"),

    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return sum(p.numel() for p in model.parameters())
    ''', label="counts frozen parameters", words=("requires_grad",)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False) if p.requires_grad)
    ''', label="counts a shared parameter twice", words=("shared",)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return len([p for p in model.parameters() if p.requires_grad])
    ''', label="counts tensors, not scalars", words=("numel",)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return sum(v.numel() for v in model.state_dict().values())
    ''', label="state_dict: buffers, frozen and tied twice", words=("buffer",)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return sum(p.numel() for p in model.parameters() if not p.requires_grad)
    ''', label="counts the frozen ones only", words=('frozen',)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return sum(v.numel() for v in model.state_dict().values() if v.requires_grad)
    ''', label="state_dict tensors are detached (always 0)", words=('state_dict',)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return sum(p.numel() for m in model.modules() for p in m.parameters() if p.requires_grad)
    ''', label="modules() x parameters() counts nested parameters several times", words=('trainable scalars',)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return sum(p.numel() for p in model.parameters() if p.grad is not None)
    ''', label="uses .grad is not None instead of requires_grad", words=("requires_grad",)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return torch.tensor([p.numel() for p in model.parameters() if p.requires_grad]).sum()
    ''', label="returns a tensor, not an int", words=("int",)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return sum(p.shape[0] for p in model.parameters() if p.requires_grad)
    ''', label="shape[0] instead of numel", words=("numel",)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return sum(p.numel() for c in model.children() for p in c.parameters(recurse=False) if p.requires_grad)
    ''', label="only the direct children's own parameters", words=('trainable scalars',)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return float(sum(p.numel() for p in model.parameters() if p.requires_grad))
    ''', label="returns a float", words=("int",)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return sum(m.weight.numel() + (m.bias.numel() if m.bias is not None else 0)
                       for m in model.modules() if isinstance(m, nn.Linear) and m.weight.requires_grad)
    ''', label="only Linear layers", words=('trainable scalars',)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            return sum(p.numel() for p in model.parameters(recurse=False) if p.requires_grad)
    ''', label="recurse=False: top-level parameters only", words=('recurse=False',)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            model.requires_grad_(True)
            return sum(p.numel() for p in model.parameters() if p.requires_grad)
    ''', label="unfreezes everything before counting", words=('requires_grad changed',)),
    Answer("04.count_trainable", "fail", '''
        def count_trainable(model):
            total = sum(p.numel() for p in model.parameters() if p.requires_grad)
            total += sum(b.numel() for b in model.buffers())
            return total
    ''', label="adds buffers", words=("buffer",)),

    # ------------------------------------------------------------------ 04.kaiming_init
    Answer("04.kaiming_init", "ok", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="kaiming_normal_ + zeros_"),
    Answer("04.kaiming_init", "ok", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                with torch.no_grad():
                    module.weight.normal_(0.0, math.sqrt(2.0 / module.in_features))
                    if module.bias is not None:
                        module.bias.zero_()
    ''', label="normal_ with std by hand under no_grad"),
    Answer("04.kaiming_init", "ok", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                fan_in = module.weight.shape[1]
                nn.init.normal_(module.weight, mean=0.0, std=(2 / fan_in) ** 0.5)
                if module.bias is not None:
                    nn.init.constant_(module.bias, 0.0)
    ''', label="nn.init.normal_ with std sqrt(2/fan_in)"),
    Answer("04.kaiming_init", "ok", '''
        def kaiming_init(module: nn.Module) -> None:
            """For model.apply: Kaiming normal (ReLU) for Linear weights, zero biases."""
            if not isinstance(module, nn.Linear):
                return
            with torch.no_grad():
                module.weight.copy_(torch.randn_like(module.weight) * math.sqrt(2 / module.in_features))
                if module.bias is not None:
                    module.bias.fill_(0)
    ''', label="randn_like * std, copy_"),
    Answer("04.kaiming_init", "ok", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_normal_(module.weight, a=0, mode="fan_in", nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            return module
    ''', label="all arguments spelled out, returns the module"),
    Answer("04.kaiming_init", "ok", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_normal_(module.weight)
                if getattr(module, "bias", None) is not None:
                    module.bias.data.zero_()
    ''', label="default kaiming_normal_ (leaky_relu with a=0 = ReLU gain)"),

    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_uniform_(module.weight, nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="kaiming_uniform_", words=("uniform",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="mode='fan_out'", words=("fan_in",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.xavier_normal_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="xavier_normal_", words=("std",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_normal_(module.weight, a=math.sqrt(5))
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="a=sqrt(5) (the default Linear gain)", words=('a=sqrt(5)',)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
    ''', label="forgets the bias", words=("bias",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                nn.init.zeros_(module.bias)
    ''', label="crashes on Linear(bias=False)", words=("bias",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if hasattr(module, "weight") and module.weight is not None and module.weight.dim() >= 2:
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
    ''', label="initialises every module with a weight (Conv, Embedding...)", words=("Linear",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, (nn.Linear, nn.Conv2d)):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="also initialises Conv2d", words=("Linear",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=math.sqrt(2 / module.out_features))
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="std from out_features", words=("fan_in",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=2 / module.in_features)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="std = 2/fan_in (variance used as std)", words=("std",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=math.sqrt(1 / module.in_features))
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="std = sqrt(1/fan_in) (LeCun)", words=("std",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                if module.bias is not None:
                    nn.init.constant_(module.bias, 0.01)
    ''', label="bias 0.01 instead of 0", words=("bias",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                std = math.sqrt(2 / module.in_features)
                module.weight = nn.Parameter(torch.randn(module.out_features, module.in_features) * std)
                if module.bias is not None:
                    module.bias = nn.Parameter(torch.zeros(module.out_features))
    ''', label="replaces the Parameters instead of changing them in place", words=("in place",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if type(module) == nn.Linear:
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="type(m) == nn.Linear skips Linear subclasses", words=("Linear",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="zero weights", words=("std",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                std = math.sqrt(2 / module.in_features)
                module.weight.data = torch.randn(module.out_features, module.in_features) * std
                if module.bias is not None:
                    module.bias.data = torch.zeros(module.out_features)
    ''', label="new float32 tensors (a float64 layer changes dtype)", words=("dtype",)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                module.weight.normal_(0, math.sqrt(2 / module.in_features))
                if module.bias is not None:
                    module.bias.zero_()
    ''', label="in-place on a leaf that requires grad, without no_grad", words=('leaf Variable',)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                nn.init.zeros_(module.bias)
    ''', label="skips Linear layers without a bias", words=('default init',)),
    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            torch.set_grad_enabled(False)
            if isinstance(module, nn.Linear):
                module.weight.normal_(0, math.sqrt(2 / module.in_features))
                if module.bias is not None:
                    module.bias.zero_()
    ''', label="set_grad_enabled(False) left switched off", words=("grad",)),

    Answer("04.kaiming_init", "fail", '''
        def kaiming_init(module):
            if isinstance(module, nn.Linear):
                torch.manual_seed(0)
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    ''', label="re-seeds the global RNG inside (same-shaped layers get identical weights)", words=("seed",)),

    # ------------------------------------------------------------------ 04.layer_output_stds
    Answer("04.layer_output_stds", "ok", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out, name=name: stds.__setitem__(name, out.std().item())))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return stds
    ''', label="default-argument binding, try/finally"),
    Answer("04.layer_output_stds", "ok", '''
        def layer_output_stds(model, x):
            stds = {}

            def make_hook(name):
                def hook(module, inputs, output):
                    stds[name] = float(output.detach().std())
                return hook

            handles = [m.register_forward_hook(make_hook(n))
                       for n, m in model.named_modules() if next(m.children(), None) is None]
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="closure factory"),
    Answer("04.layer_output_stds", "ok", '''
        def layer_output_stds(model, x):
            import functools
            outputs = {}

            def keep(name, module, inputs, output):
                outputs[name] = output.detach()

            handles = []
            for name, m in model.named_modules():
                if len(m._modules) == 0:
                    handles.append(m.register_forward_hook(functools.partial(keep, name)))
            try:
                with torch.no_grad():
                    model(x)
            finally:
                for h in handles:
                    h.remove()
            return {name: out.std().item() for name, out in outputs.items()}
    ''', label="functools.partial, store outputs, std afterwards"),
    Answer("04.layer_output_stds", "ok", '''
        def layer_output_stds(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
            """Std of each leaf module's output, from one forward pass."""
            leaves = {m: n for n, m in model.named_modules() if not any(True for _ in m.children())}
            stds: dict[str, float] = {}

            def hook(module, inputs, output):
                if module in leaves:
                    stds[leaves[module]] = output.std().item()

            handle = torch.nn.modules.module.register_module_forward_hook(hook)
            try:
                model(x)
            finally:
                handle.remove()
            return stds
    ''', label="global module forward hook, filtered"),
    Answer("04.layer_output_stds", "ok", '''
        def layer_output_stds(model, x):
            class Recorder:
                def __init__(self, name, store):
                    self.name, self.store = name, store

                def __call__(self, module, inputs, output):
                    self.store[self.name] = output.std().item()

            stds = {}
            handles = [m.register_forward_hook(Recorder(n, stds))
                       for n, m in model.named_modules() if len(list(m.children())) == 0]
            with torch.no_grad():
                model(x)
            for handle in handles:
                handle.remove()
            return stds
    ''', label="callable class as the hook"),
    Answer("04.layer_output_stds", "ok", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if list(m.children()):
                    continue
                handles.append(m.register_forward_hook(
                    lambda mod, inp, out, key=name: stds.update({key: out.std(correction=0).item()})))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return stds
    ''', label="biased std (correction=0)"),

    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out: stds.__setitem__(name, out.std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="lambda sees the loop variable's last value", words=("lambda",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds = {}
            for name, m in model.named_modules():
                if not list(m.children()):
                    m.register_forward_hook(lambda mod, inp, out, name=name: stds.__setitem__(name, out.std().item()))
            model(x)
            return stds
    ''', label="hooks never removed", words=("hook",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                handles.append(m.register_forward_hook(
                    lambda mod, inp, out, name=name: stds.__setitem__(name, out.std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="hooks containers too (extra keys, '' included)", words=("leaf",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_children():
                handles.append(m.register_forward_hook(
                    lambda mod, inp, out, name=name: stds.__setitem__(name, out.std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="named_children: top level only", words=("leaf",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out, name=name: stds.__setitem__(name, out.std())))
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="tensors instead of Python floats", words=("float",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out, name=name: stds.__setitem__(name, inp[0].std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="std of the input, not the output", words=("input",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out, name=name: stds.__setitem__(name, out.std().item())))
            model(x)
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="runs the model twice", words=("once",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds = {}
            for name, m in model.named_modules():
                if not list(m.children()):
                    x = m(x)
                    stds[name] = x.std().item()
            return stds
    ''', label="no hooks: chains the leaves by hand (wrong for a custom forward)", words=("hook",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            model.eval()
            stds, handles = {}, []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out, name=name: stds.__setitem__(name, out.std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="switches the model to eval mode", words=("eval",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out, name=name: stds.__setitem__(name, out.var().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="variance instead of std", words=('expected std',)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out, name=name: stds.__setitem__(name, out.std(dim=0).mean().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="mean of per-feature stds", words=('expected std',)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out: stds.__setitem__(type(mod).__name__, out.std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="keys are class names, not module names", words=("named_modules",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if list(m.parameters(recurse=False)):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out, name=name: stds.__setitem__(name, out.std().item())))
            model(x)
            for h in handles:
                h.remove()
            return stds
    ''', label="only modules with parameters (skips ReLU, Dropout...)", words=("leaf",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds = {}
            for name, m in model.named_modules():
                if not list(m.children()):
                    m.register_forward_hook(lambda mod, inp, out, name=name: stds.__setitem__(name, out.std().item()))
            model(x)
            for m in model.modules():
                m._forward_hooks.clear()
            return stds
    ''', label="clears _forward_hooks (also removes hooks that were there before)", words=("hook",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out, name=name: stds.setdefault(name, out.std().item())))
            try:
                model(x)
            finally:
                for h in handles:
                    h.remove()
            return stds
    ''', label="hook returns a value (setdefault): replaces the module's output", words=('replaces',)),
    Answer("04.layer_output_stds", "fail", '''
        _STDS = {}

        def layer_output_stds(model, x):
            handles = []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out, name=name: _STDS.__setitem__(name, out.std().item())))
            model(x)
            for h in handles:
                h.remove()
            return _STDS
    ''', label="module-level dict keeps keys from earlier calls", words=('expected keys',)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds = {}
            for name, m in model.named_modules():
                if not list(m.children()):
                    handle = m.register_forward_hook(
                        lambda mod, inp, out, name=name: stds.__setitem__(name, out.std().item()))
            model(x)
            handle.remove()
            return stds
    ''', label="removes only the last hook", words=("hook",)),
    Answer("04.layer_output_stds", "fail", '''
        def layer_output_stds(model, x):
            stds, handles = {}, []
            for name, m in model.named_modules():
                if not list(m.children()):
                    handles.append(m.register_forward_hook(
                        lambda mod, inp, out, name=name: stds.__setitem__(name, out.std().item())))
            model(x)
            for h in handles:
                h.remove()
    ''', label="forgets return", words=("return",)),
]
