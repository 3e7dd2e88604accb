"""Pictures rendered with Agg: panel counts, labels, one truly shared colour scale."""

import numpy as np
import pytest

from attnpool import attention_weights, datasets, nadaraya_watson
from attnpool.plotting import plot_density, plot_fit, plot_history, plot_kernels, show_heatmaps


def panels(fig):
    return [ax for ax in fig.axes if ax.images]


def test_identity_heatmap_is_the_picture_of_exact_lookup():
    fig = show_heatmaps(np.eye(10))
    (ax,) = panels(fig)
    np.testing.assert_array_equal(ax.images[0].get_array(), np.eye(10))
    assert ax.get_xlabel() == "Keys" and ax.get_ylabel() == "Queries"
    assert len(fig.axes) == 2  # the panel and one colorbar


def test_grid_has_labels_on_outer_axes_and_one_shared_scale():
    rng = np.random.default_rng(0)
    grid = rng.uniform(0, 1, (2, 3, 5, 7))
    grid[1, 2] *= 4  # one panel with a larger range
    titles = [["a", "b", "c"], ["d", "e", "f"]]
    fig = show_heatmaps(grid, titles=titles, xlabel="k", ylabel="q")
    axes = panels(fig)
    assert len(axes) == 6
    assert len(fig.axes) == 7  # one colorbar only
    norms = {(im.norm.vmin, im.norm.vmax) for ax in axes for im in ax.images}
    assert norms == {(grid.min(), grid.max())}
    xlabels = [ax.get_xlabel() for ax in axes]
    ylabels = [ax.get_ylabel() for ax in axes]
    assert xlabels == ["", "", "", "k", "k", "k"]
    assert ylabels == ["q", "", "", "q", "", ""]
    assert [ax.get_title() for ax in axes] == ["a", "b", "c", "d", "e", "f"]


def test_three_dimensional_stack_is_one_row():
    fig = show_heatmaps(np.ones((4, 3, 3)), titles=["1", "2", "3", "4"])
    assert len(panels(fig)) == 4


def test_nan_rows_are_grey_not_an_error():
    """A query no key reaches was left blank, the colour of a weight of 0 in ``Reds``;
    it is grey, and the colour bar says what grey means."""
    from matplotlib.colors import to_rgba

    weights = np.eye(3)
    weights[1] = np.nan
    fig = show_heatmaps(weights)
    image = panels(fig)[0].images[0]
    assert image.norm.vmax == 1.0
    assert image.cmap.get_bad() == pytest.approx(to_rgba("0.75"))
    assert image.cmap(image.norm(0.0)) != pytest.approx(image.cmap.get_bad())
    assert "grey: no key in reach" in fig.axes[-1].get_ylabel()
    assert "grey" not in show_heatmaps(np.eye(3)).axes[-1].get_ylabel()
    own = show_heatmaps(np.stack([weights, np.eye(3)]), shared_scale=False)
    assert [ax.get_ylabel() for ax in own.axes[2:]] == ["grey: no key in reach", ""]


def test_plot_fit_draws_one_column_and_refuses_several():
    x = np.linspace(0, 1, 20)
    fig = plot_fit(x[:, None], np.sin(x)[:, None], x, {"fit": np.sin(x)})
    np.testing.assert_array_equal(fig.axes[0].lines[0].get_xdata(), x)
    with pytest.raises(ValueError, match=r"x_train, y_train: plot_fit draws one input column"):
        plot_fit(np.c_[x, x], np.sin(x), x, {"fit": np.sin(x)})
    with pytest.raises(ValueError, match=r"received shapes \(20,\) and \(19,\)"):
        plot_fit(x, np.sin(x)[:19], x, {"fit": np.sin(x)})


def test_the_textbooks_call_pastes_as_it_is():
    # d2l: show_heatmaps(matrices, xlabel, ylabel, titles=None, ...), titles[j] per column
    grid = np.random.default_rng(0).random((2, 3, 4, 5))
    fig = show_heatmaps(grid, "Keys", "Queries", titles=["x", "y", "z"])
    panels = fig.axes[:6]
    assert [ax.get_title() for ax in panels] == ["x", "y", "z"] * 2
    assert [ax.get_xlabel() for ax in panels[3:]] == ["Keys"] * 3
    assert panels[0].get_ylabel() == panels[3].get_ylabel() == "Queries"
    with pytest.raises(ValueError, match=r"titles: expected 6 titles .* or 3 \(one per column\)"):
        show_heatmaps(grid, "Keys", "Queries", titles=["x", "y", "z", "w"])


@pytest.mark.parametrize(
    ("matrices", "titles", "pattern"),
    [
        (np.ones(3), None, r"matrices: expected .* received shape \(3,\)"),
        (np.ones((1, 1, 1, 2, 2)), None, "matrices: expected"),
        (np.ones((2, 3, 3)), ["only one"], "titles: expected 2 titles"),
    ],
)
def test_bad_heatmap_input(matrices, titles, pattern):
    with pytest.raises(ValueError, match=pattern):
        show_heatmaps(matrices, titles=titles)


def test_no_global_state_is_changed():
    import matplotlib

    before = dict(matplotlib.rcParams)
    show_heatmaps(np.eye(3))
    plot_kernels()
    assert dict(matplotlib.rcParams) == before


def test_plot_fit_draws_data_truth_and_each_estimate():
    data = datasets.sine_data()
    estimates = {
        f"h = {h}": nadaraya_watson(data.x_train, data.y_train, data.x_val, bandwidth=h)
        for h in (0.1, 1.0)
    }
    fig = plot_fit(data.x_train, data.y_train, data.x_val, estimates, truth=data.y_val)
    labels = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    assert labels == ["data", "truth", "h = 0.1", "h = 1.0"]


def test_plot_kernels_with_fits():
    data = datasets.sine_data()
    fits = {
        k: nadaraya_watson(data.x_train, data.y_train, data.x_val, kernel=k, bandwidth=1.0)
        for k in ("gaussian", "boxcar")
    }
    fig = plot_kernels(["gaussian", "boxcar"], fits=fits, x_grid=data.x_val)
    assert len(fig.axes) == 4
    assert [ax.get_title() for ax in fig.axes[:2]] == ["gaussian", "boxcar"]
    with pytest.raises(
        ValueError, match="fits: expected predictions on x_grid for kernel 'boxcar'"
    ):
        plot_kernels(["gaussian", "boxcar"], fits={"gaussian": fits["gaussian"]}, x_grid=data.x_val)


def test_weights_heatmap_from_the_library():
    keys = np.linspace(0, 1, 8)
    fig = show_heatmaps(attention_weights(keys, keys, bandwidth=0.1))
    assert panels(fig)[0].images[0].get_array().shape == (8, 8)


def test_plot_history_draws_each_curve_and_the_reference():
    fig = plot_history({"a": [3.0, 2.0, 1.5], "b": [4.0, 1.0]}, reference=("optimum", 1.2))
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["a", "b", "optimum"]
    np.testing.assert_array_equal(ax.get_lines()[1].get_ydata(), [4.0, 1.0])
    assert ax.get_yscale() == "log"
    with pytest.raises(ValueError, match=r"histories\['a'\]: expected a non-empty 1-D array"):
        plot_history({"a": []})


def test_figures_are_pyplots_and_draw_into_a_given_axes():
    import matplotlib.pyplot as plt
    import pandas as pd

    x = pd.Series(np.linspace(0, 5, 30), name="age")
    y = pd.Series(np.sin(x), name="income")
    grid = np.linspace(0, 5, 50)
    fig = plot_fit(x, y, grid, {"fit": np.sin(grid)})
    assert fig.number in plt.get_fignums()  # plt.show() and sphinx-gallery see it
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("age", "income")  # the data's names
    plt.close(fig)
    outer, axes = plt.subplots(1, 2)
    drawn = plot_fit(x.to_numpy(), y.to_numpy(), grid, {"fit": np.sin(grid)}, ax=axes[1],
                     xlabel="hours", ylabel="pay")  # fmt: skip
    assert drawn is outer and axes[1].get_xlabel() == "hours" and len(axes[0].lines) == 0
    assert axes[1].get_legend() is not None
    plot_density(grid, np.exp(-grid), ax=axes[0])
    assert axes[0].get_ylabel() == "density"
    plt.close(outer)


def test_the_kernels_fits_carry_a_legend_and_heatmaps_may_keep_their_own_scales():
    import matplotlib.pyplot as plt

    grid = np.linspace(0, 5, 50)
    fits = {name: np.sin(grid) for name in ("gaussian", "boxcar")}
    fig = plot_kernels(("gaussian", "boxcar"), fits=fits, x_grid=grid,
                       data=(grid, np.sin(grid)), truth=np.sin(grid))  # fmt: skip
    bottom_left = fig.axes[2]
    labels = [t.get_text() for t in bottom_left.get_legend().get_texts()]
    assert labels == ["data", "truth", "fit"]
    plt.close(fig)
    weights = np.stack([np.eye(4) * 0.9 + 0.01, np.full((4, 4), 0.25) + np.eye(4) * 1e-3])
    shared = show_heatmaps(weights)
    own = show_heatmaps(weights, shared_scale=False)
    assert len(shared.axes) == 3 and len(own.axes) == 4  # one colorbar, or one per panel
    scales = [image.norm.vmax for ax in own.axes[:2] for image in ax.images]
    assert scales[1] == pytest.approx(0.251)  # the nearly uniform panel on its own scale
    plt.close(shared)
    plt.close(own)
