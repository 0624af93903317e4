"""
A Pipeline on a DataFrame with string labels, saved and reloaded
================================================================

The estimators are ordinary scikit-learn classifiers: they take a pandas
DataFrame, remember its column names, accept labels of any type, sit in a
:class:`~sklearn.pipeline.Pipeline` next to a
:class:`~sklearn.compose.ColumnTransformer`, and pickle with :mod:`joblib`.
This example builds such a pipeline on the wine data with a categorical column
added, saves it, reloads it in a fresh object and checks that it predicts the
same thing.
"""

# %%
# A DataFrame with a categorical column and string labels
# -------------------------------------------------------
# The wine data (178 samples, 13 measurements, 3 cultivars) as a DataFrame.
# The labels become the cultivars' names, and a made-up ``vineyard`` column
# shows a categorical feature going through a OneHotEncoder.
import tempfile
from pathlib import Path

import joblib
import matplotlib.pyplot as plt
import numpy as np
from sklearn.compose import make_column_transformer
from sklearn.datasets import load_wine
from sklearn.metrics import ConfusionMatrixDisplay
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklmargin import MarginSoftmaxClassifier

wine = load_wine(as_frame=True)
X = wine.frame.drop(columns="target")
names = np.array(["Barolo", "Grignolino", "Barbera"])
y = names[wine.target.to_numpy()]
X["vineyard"] = np.random.RandomState(0).choice(["north", "south", "east"], len(X))
print(X.iloc[:3, [0, 1, 2, -1]])
print("labels:", ", ".join(sorted(set(y.tolist()))))

X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, stratify=y, random_state=0
)

# %%
# The pipeline
# ------------
numeric = [column for column in X.columns if column != "vineyard"]
pipeline = make_pipeline(
    make_column_transformer(
        (StandardScaler(), numeric),
        (OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["vineyard"]),
    ),
    MarginSoftmaxClassifier(loss="arcface", m=0.1, s=20),
)
# DataFrames all the way: the classifier then sees (and keeps) column names.
pipeline.set_output(transform="pandas")
pipeline.fit(X_train, y_train)
classifier = pipeline[-1]
print("classes_:", ", ".join(classifier.classes_.tolist()))
print(
    "the classifier's feature_names_in_ end with:",
    ", ".join(classifier.feature_names_in_[-4:].tolist()),
)
print(f"test accuracy: {pipeline.score(X_test, y_test):.3f}")
first = pipeline.predict_proba(X_test[:1])[0]
pairs = zip(classifier.classes_, first, strict=True)
print(
    "probabilities of the first test sample:",
    ", ".join(f"{label} {p:.3f}" for label, p in pairs),
)

# %%
# Save, reload, compare
# ---------------------
# ``joblib.dump`` pickles the whole fitted pipeline (scaler statistics,
# encoder categories, prototypes and biases). The reloaded copy predicts the
# same labels and the same probabilities, bit for bit.
with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "wine_arcface.joblib"
    joblib.dump(pipeline, path)
    print(f"saved {path.name}: {path.stat().st_size} bytes")
    reloaded = joblib.load(path)

same_labels = np.array_equal(reloaded.predict(X_test), pipeline.predict(X_test))
same_proba = np.array_equal(
    reloaded.predict_proba(X_test), pipeline.predict_proba(X_test)
)
print(f"same predictions: {same_labels}, same probabilities: {same_proba}")

# %%
# The reloaded model's confusion matrix on the test split, with the string
# labels as axis ticks.
fig, ax = plt.subplots(figsize=(4.8, 4.2))
ConfusionMatrixDisplay.from_estimator(reloaded, X_test, y_test, ax=ax, colorbar=False)
ax.set_title("reloaded pipeline, test split")
fig.tight_layout()
plt.show()
