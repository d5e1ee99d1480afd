"""estimator_lite.export: serving input receivers and signature outputs."""
from estimator_lite.export.export_output import ClassificationOutput
from estimator_lite.export.export_output import ExportOutput
from estimator_lite.export.export_output import PredictOutput
from estimator_lite.export.export_output import RegressionOutput
